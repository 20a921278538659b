//! Who authored a commit, as a forge tells it, and whether that is one of the authors
//! `std/post`'s `require-author` names.
//!
//! A forge with accounts (GitHub) maps a commit to the account its author email belongs to; that
//! account, not the free-text git name anyone can set, is what a name is matched against. A name
//! ending in `[bot]` is a bot's login: it matches only an account GitHub itself marks as a bot,
//! since the login of an ordinary account is its owner's choice. A commit whose email maps to no
//! account matches nothing. The local forge has no accounts: the git author name is all there is,
//! matched exactly.

/// The author of a commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommitAuthor {
    /// The local forge: the author name of the commit object (`%an`, no mailmap applied).
    Git { name: String },
    /// A hosted forge's account: its login, and whether the forge marks it as a bot (GitHub's
    /// `author.type == "Bot"`). `name` is the git author name, for messages only.
    Account {
        login: String,
        is_bot: bool,
        name: String,
    },
    /// A hosted forge maps the commit's email to no account (GitHub's `author: null`): it
    /// matches no name, not even its git author name.
    NoAccount { name: String },
}

/// The suffix of a bot's login on GitHub (`github-actions[bot]`).
pub const BOT_SUFFIX: &str = "[bot]";

/// Longest piece of an author's name echoed in a message.
const MAX_SHOWN: usize = 100;

impl CommitAuthor {
    /// The account's login, or the git name locally; `None` when there is no account.
    pub fn login(&self) -> Option<&str> {
        match self {
            CommitAuthor::Git { name } => Some(name),
            CommitAuthor::Account { login, .. } => Some(login),
            CommitAuthor::NoAccount { .. } => None,
        }
    }

    /// The git author name.
    pub fn name(&self) -> &str {
        match self {
            CommitAuthor::Git { name }
            | CommitAuthor::Account { name, .. }
            | CommitAuthor::NoAccount { name } => name,
        }
    }

    /// Whether the forge marks the author as a bot (never locally).
    pub fn is_bot(&self) -> bool {
        matches!(self, CommitAuthor::Account { is_bot: true, .. })
    }

    /// Whether this author is `wanted`: see the module's documentation.
    pub fn matches(&self, wanted: &str) -> bool {
        match self {
            CommitAuthor::Git { name } => name == wanted,
            CommitAuthor::Account { login, is_bot, .. } => {
                login == wanted && (*is_bot || !wanted.ends_with(BOT_SUFFIX))
            }
            CommitAuthor::NoAccount { .. } => false,
        }
    }

    /// Who this is, for a message: `octocat`, `the user account reviewflow[bot]`,
    /// `"Mona", whose email maps to no GitHub account`. Names are bounded and quoted when they
    /// hold anything unusual (they are the commit author's to choose).
    pub fn describe(&self) -> String {
        match self {
            CommitAuthor::Git { name } => shown(name),
            CommitAuthor::Account {
                login,
                is_bot: false,
                ..
            } if login.ends_with(BOT_SUFFIX) => format!("the user account {}", shown(login)),
            CommitAuthor::Account { login, .. } => shown(login),
            CommitAuthor::NoAccount { name } => {
                format!("{:?}, whose email maps to no GitHub account", bounded(name))
            }
        }
    }
}

/// The head's author is none of those `require-author` names: the head, who authored it (as
/// [`CommitAuthor::describe`] says) and who was wanted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the head {head} is authored by {author}, not by {wanted}{hint}")]
pub struct AuthorMismatch {
    pub head: String,
    pub author: String,
    /// `reviewflow[bot]`, or `any of a, b`.
    pub wanted: String,
    /// Why a near miss missed, after the names (empty when none applies).
    pub hint: &'static str,
}

/// `Ok` when `author` is one of `wanted` (or nothing is wanted); else why not, naming the head,
/// who authored it and who was wanted.
pub fn check_author(
    head_short: &str,
    author: &CommitAuthor,
    wanted: &[String],
) -> Result<(), AuthorMismatch> {
    if wanted.is_empty() || wanted.iter().any(|w| author.matches(w)) {
        return Ok(());
    }
    let names = match wanted {
        [one] => one.clone(),
        many => format!("any of {}", many.join(", ")),
    };
    let hint = match author {
        CommitAuthor::Account {
            login,
            is_bot: false,
            ..
        } if wanted.iter().any(|w| w == login && w.ends_with(BOT_SUFFIX)) => {
            " (a bot name matches only a Bot account)"
        }
        _ => "",
    };
    Err(AuthorMismatch {
        head: head_short.to_owned(),
        author: author.describe(),
        wanted: names,
        hint,
    })
}

fn bounded(text: &str) -> String {
    text.chars().take(MAX_SHOWN).collect()
}

/// `text` as it is when it reads plainly, else quoted with its escapes.
fn shown(text: &str) -> String {
    let cut = bounded(text);
    let plain = !cut.is_empty()
        && cut.len() == text.len()
        && cut.trim() == cut
        && !cut.chars().any(|c| c.is_control() || c == '"');
    if plain { cut } else { format!("{cut:?}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(login: &str, is_bot: bool) -> CommitAuthor {
        CommitAuthor::Account {
            login: login.into(),
            is_bot,
            name: login.into(),
        }
    }

    #[test]
    fn bot_names_match_only_bot_accounts() {
        assert!(account("reviewflow[bot]", true).matches("reviewflow[bot]"));
        assert!(!account("reviewflow[bot]", false).matches("reviewflow[bot]"));
        assert!(!account("reviewflow", true).matches("reviewflow[bot]"));
        assert!(account("octocat", false).matches("octocat"));
        assert!(!account("octocat", false).matches("Octocat"));
        assert!(!account("octocat", false).matches("octo"));
    }

    #[test]
    fn no_account_never_matches_and_git_names_match_exactly() {
        let none = CommitAuthor::NoAccount {
            name: "reviewflow[bot]".into(),
        };
        assert!(!none.matches("reviewflow[bot]"));
        assert_eq!(none.login(), None);
        let git = CommitAuthor::Git {
            name: "reviewflow[bot]".into(),
        };
        assert!(git.matches("reviewflow[bot]"));
        assert!(!git.matches("reviewflow[BOT]"));
        assert!(!git.is_bot());
    }

    #[test]
    fn refusals_say_who_and_whom() {
        let wanted = vec!["reviewflow[bot]".to_owned()];
        assert_eq!(
            check_author("1a2b3c4", &account("reviewflow[bot]", true), &wanted),
            Ok(())
        );
        assert_eq!(
            check_author("1a2b3c4", &account("octocat", false), &[]),
            Ok(())
        );
        assert_eq!(
            check_author("1a2b3c4", &account("octocat", false), &wanted)
                .unwrap_err()
                .to_string(),
            "the head 1a2b3c4 is authored by octocat, not by reviewflow[bot]"
        );
        let two = vec!["a".to_owned(), "b[bot]".to_owned()];
        assert_eq!(
            check_author("1a2b3c4", &account("b[bot]", false), &two)
                .unwrap_err()
                .to_string(),
            "the head 1a2b3c4 is authored by the user account b[bot], not by any of a, b[bot] \
             (a bot name matches only a Bot account)"
        );
    }

    #[test]
    fn hostile_names_are_bounded_and_quoted() {
        let git = CommitAuthor::Git {
            name: format!("evil\n::error::{}", "x".repeat(500)),
        };
        let shown = git.describe();
        assert!(!shown.contains('\n'), "{shown}");
        assert!(shown.starts_with("\"evil\\n"), "{shown}");
        assert!(shown.chars().count() < 120, "{shown}");
        let empty = CommitAuthor::Git {
            name: String::new(),
        };
        assert_eq!(empty.describe(), "\"\"");
    }
}
