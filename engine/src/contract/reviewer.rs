//! Reviewer kinds: the reviewers a stage kind can run (`reviewer "claude"`), whose model each
//! runs, and which credentials that model's CLI reads. The engine names no vendor and no
//! reviewer: it reads them here, from the stage kind's contract.

use schemars::JsonSchema;
use serde::Serialize;

use super::StageContract;

/// One reviewer a stage kind can run, named by the first argument of its `reviewer` child.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ReviewerKind {
    /// The reviewer's name (`reviewer "claude"`).
    pub name: &'static str,
    /// Whose model it runs; `None` when it runs none, or any (a program the pipeline names).
    pub vendor: Option<&'static str>,
    /// The environment variables the model's CLI authenticates with; the only secrets it may
    /// be given.
    pub credentials: &'static [&'static str],
    /// The environment variable that moves its model API to another host (`OPENAI_BASE_URL`):
    /// set, the host there answers, and which vendor's model that is the host's to say, not the
    /// kind's (principle 2). `None` for a reviewer whose API cannot be moved.
    pub api_url: Option<&'static str>,
    /// The variables a stage may give the reviewer's client with `env` besides
    /// [`COMMON_SETTINGS`] and [`Self::api_url`]: those known to change only its model, its
    /// limits or its output. A model's client reads its configuration from its environment, and
    /// a variable not known to be harmless may send the conversation elsewhere (a debug log on
    /// stderr, a proxy, a telemetry endpoint), so any other is reported (principles 2 and 3).
    /// `None` for a reviewer whose program the pipeline names: its variables are the pipeline's.
    pub settings: Option<&'static [&'static str]>,
}

/// What every model reviewer's client may be given with `env`: where programs are found, and
/// the locale and terminal its output is written for.
pub const COMMON_SETTINGS: &[&str] = &[
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "NO_COLOR",
    "TERM",
];

impl ReviewerKind {
    /// Whether a stage may give the reviewer's client `env "<name>"` without a finding.
    pub fn admits_setting(&self, name: &str) -> bool {
        match self.settings {
            None => true,
            Some(own) => {
                COMMON_SETTINGS.contains(&name) || own.contains(&name) || self.api_url == Some(name)
            }
        }
    }

    /// The names of `kinds`, in order, for an enum of words (`N` is `kinds.len()`).
    pub const fn names<const N: usize>(kinds: &[ReviewerKind]) -> [&'static str; N] {
        let mut out = [""; N];
        let mut i = 0;
        while i < N {
            out[i] = kinds[i].name;
            i += 1;
        }
        out
    }
}

impl StageContract {
    /// The reviewers this kind runs, named by its `reviewer` child.
    pub fn reviewer_kinds(mut self, kinds: &'static [ReviewerKind]) -> Self {
        self.reviewer_kinds = kinds;
        self
    }

    /// The reviewers this kind runs (empty for a stage that runs none).
    pub fn reviewers(&self) -> &'static [ReviewerKind] {
        self.reviewer_kinds
    }

    /// The reviewer named `name`.
    pub fn reviewer_kind(&self, name: &str) -> Option<&'static ReviewerKind> {
        self.reviewer_kinds.iter().find(|k| k.name == name)
    }

    /// Every vendor of the reviewers, once each, in order.
    pub fn vendors(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for v in self.reviewer_kinds.iter().filter_map(|k| k.vendor) {
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }

    /// The one vendor whose model keys `vars` are (each a credential of one of the reviewers),
    /// when the keys among them are all one vendor's; `None` when there are none, or several
    /// vendors'. A `vendor=` this contradicts is not believed (principle 2), in `check` and `run`.
    pub fn keys_vendor<'v>(&self, vars: impl IntoIterator<Item = &'v str>) -> Option<&'static str> {
        let mut found = None;
        for var in vars {
            let Some(vendor) = self
                .reviewer_kinds
                .iter()
                .find(|k| k.credentials.contains(&var))
                .and_then(|k| k.vendor)
            else {
                continue;
            };
            match found {
                None => found = Some(vendor),
                Some(v) if v != vendor => return None,
                Some(_) => {}
            }
        }
        found
    }

    /// The vendor `word` means: a vendor's name, or the name of a reviewer whose vendor it is
    /// (`"claude"` means its vendor), in any case, blanks around ignored. `None` for any other
    /// word.
    pub fn vendor_named(&self, word: &str) -> Option<&'static str> {
        let word = word.trim();
        self.reviewer_kinds.iter().find_map(|k| match k.vendor {
            Some(v) if v.eq_ignore_ascii_case(word) || k.name.eq_ignore_ascii_case(word) => Some(v),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: &[ReviewerKind] = &[
        ReviewerKind {
            name: "plain",
            vendor: None,
            credentials: &[],
            api_url: None,
            settings: None,
        },
        ReviewerKind {
            name: "alpha-cli",
            vendor: Some("alpha"),
            credentials: &["ALPHA_KEY"],
            api_url: None,
            settings: None,
        },
        ReviewerKind {
            name: "beta-cli",
            vendor: Some("beta"),
            credentials: &[],
            api_url: None,
            settings: None,
        },
        ReviewerKind {
            name: "alpha-other",
            vendor: Some("alpha"),
            credentials: &[],
            api_url: None,
            settings: None,
        },
    ];

    #[test]
    fn names_are_read_in_const_context() {
        const NAMES: [&str; 4] = ReviewerKind::names::<4>(KINDS);
        assert_eq!(NAMES, ["plain", "alpha-cli", "beta-cli", "alpha-other"]);
    }

    #[test]
    fn vendors_and_their_aliases() {
        let c = StageContract::new("x/review", "reviews").reviewer_kinds(KINDS);
        assert_eq!(c.vendors(), ["alpha", "beta"]);
        assert_eq!(c.vendor_named("alpha"), Some("alpha"));
        assert_eq!(c.vendor_named("alpha-cli"), Some("alpha"));
        assert_eq!(c.vendor_named(" Alpha "), Some("alpha"));
        assert_eq!(c.vendor_named("alpha-other"), Some("alpha"));
        assert_eq!(c.vendor_named("beta-cli"), Some("beta"));
        assert_eq!(c.vendor_named("plain"), None);
        assert_eq!(c.vendor_named("gamma"), None);
        assert_eq!(
            c.reviewer_kind("alpha-cli").map(|k| k.credentials),
            Some(&["ALPHA_KEY"][..])
        );
        assert!(StageContract::new("run", "runs").reviewers().is_empty());
    }
}
