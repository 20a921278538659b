//! Whether a command line or an environment turns off what tells a program who it talks to.
//! Principle 1 holds for a channel as for code: what a program receives over a channel whose
//! server it does not verify (TLS verification off, plain `http`, a second package index that
//! anyone can publish to) is chosen by whoever sits on the path or publishes there, and what it
//! sends (a token in a header) goes to them too. Principle 3: the schemes admitted are the ones
//! that verify (`https`, `ssh`), and plain `http` only to this machine.
//!
//! Which option or variable turns verification off is each program's business; the tables below
//! say it for the common clients and package managers.

/// Options that make a client accept any server: the option, and what it does.
const OPTIONS: &[(&str, &str)] = &[
    ("-k", "accepts any certificate"),
    ("--insecure", "accepts any certificate"),
    ("--no-check-certificate", "accepts any certificate"),
    ("--insecure-skip-tls-verify", "accepts any certificate"),
    ("--tls-verify=false", "accepts any certificate"),
    ("--tlsverify=false", "accepts any certificate"),
    ("--disable-tls-verification", "accepts any certificate"),
    ("--insecure-registry", "accepts any registry certificate"),
    ("--strict-ssl=false", "accepts any certificate"),
    ("--trusted-host", "accepts any certificate from that index"),
    (
        "--extra-index-url",
        "installs from a second index, where the higher version of a name wins (dependency confusion)",
    ),
];

/// Programs that take `-k` as "insecure": elsewhere `-k` means something else.
const DASH_K: &[&str] = &["curl"];

/// Settings written as `name=value` (git's `-c`, an `export`, `npm config set`) or as a
/// variable of the stage's environment, and the values that turn verification off (empty: any
/// value does).
const SETTINGS: &[(&str, &[&str])] = &[
    ("NODE_TLS_REJECT_UNAUTHORIZED", &["0"]),
    ("PYTHONHTTPSVERIFY", &["0"]),
    ("GIT_SSL_NO_VERIFY", &[]),
    ("http.sslVerify", &["false", "0", "no", "off"]),
    ("http.sslverify", &["false", "0", "no", "off"]),
    ("NPM_CONFIG_STRICT_SSL", &["false"]),
    ("npm_config_strict_ssl", &["false"]),
    ("strict-ssl", &["false"]),
    ("PIP_TRUSTED_HOST", &[]),
    ("PIP_EXTRA_INDEX_URL", &[]),
    ("UV_EXTRA_INDEX_URL", &[]),
    ("UV_INSECURE_HOST", &[]),
    ("GOINSECURE", &[]),
    ("GOSUMDB", &["off"]),
    ("GONOSUMCHECK", &[]),
    ("GONOSUMDB", &[]),
    ("GOFLAGS", &["-insecure"]),
    ("CURL_CA_BUNDLE", &[""]),
    ("REQUESTS_CA_BUNDLE", &[""]),
    ("SSL_CERT_FILE", &["", "/dev/null"]),
];

/// A way a command line or an environment gives up verifying its server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unverified {
    /// What the file writes (`--insecure`, `NODE_TLS_REJECT_UNAUTHORIZED=0`, a URL).
    pub text: String,
    /// What it does, in words.
    pub does: &'static str,
}

/// What in these words (a command line's, or code on a shell's command line split at spaces)
/// gives up verifying a server, first found first.
pub fn unverified_words(words: &[&str]) -> Option<(usize, Unverified)> {
    let program = words.first().map(|p| crate::code::base_name(p));
    for (i, word) in words.iter().enumerate() {
        if let Some(found) = unverified_text(word, program) {
            return Some((i, found));
        }
        // Code on a shell's command line: its own words, each with the program it follows.
        if word.contains(char::is_whitespace) {
            let mut program = None;
            for part in word.split(|c: char| c.is_whitespace() || matches!(c, ';' | '|' | '&')) {
                let part = part.trim_matches(['"', '\'', '(', ')']);
                if part.is_empty() {
                    program = None;
                    continue;
                }
                if program.is_none() && !part.contains('=') {
                    program = Some(crate::code::base_name(part));
                }
                if let Some(found) = unverified_text(part, program) {
                    return Some((i, found));
                }
            }
        }
    }
    None
}

/// One word, following `program`.
fn unverified_text(word: &str, program: Option<&str>) -> Option<Unverified> {
    let found = |does| {
        Some(Unverified {
            text: word.to_owned(),
            does,
        })
    };
    if word == "-k" && program.is_some_and(|p| DASH_K.contains(&p)) {
        return found("accepts any certificate");
    }
    if word != "-k"
        && let Some((_, does)) = OPTIONS
            .iter()
            .find(|(o, _)| word == *o || word.strip_prefix(o).is_some_and(|r| r.starts_with('=')))
    {
        return found(does);
    }
    if let Some((name, value)) = word.split_once('=')
        && let Some(does) = unverified_setting(name, value)
    {
        return found(does);
    }
    if plain_http(word) {
        return found("talks plain http, which anyone on the path reads and rewrites");
    }
    None
}

/// Whether the variable or setting `name` set to `value` gives up verifying a server.
pub fn unverified_setting(name: &str, value: &str) -> Option<&'static str> {
    let value = value.trim_matches(['"', '\'']);
    if let Some((_, bad)) = SETTINGS.iter().find(|(n, _)| *n == name) {
        let off = if bad.is_empty() {
            !matches!(value, "" | "0" | "false")
        } else if name == "GOFLAGS" {
            value.split_whitespace().any(|w| w == "-insecure")
        } else {
            bad.iter().any(|b| value.eq_ignore_ascii_case(b))
        };
        if off {
            return Some(if name.contains("EXTRA_INDEX") {
                "installs from a second index, where the higher version of a name wins (dependency confusion)"
            } else if name.starts_with("GO") && name.contains("SUM") {
                "turns off Go's checksum database, which pins every module's content"
            } else {
                "turns off the verification of the server's certificate"
            });
        }
    }
    // A proxy for `https` over plain `http` only tunnels: the TLS inside is end to end.
    let proxy = name.to_ascii_uppercase().ends_with("_PROXY");
    (!proxy && plain_http(value))
        .then_some("names a server over plain http, which anyone on the path reads and rewrites")
}

/// A URL over plain `http` to another machine (`http://127.0.0.1`, `localhost` and `[::1]` are
/// this one).
fn plain_http(word: &str) -> bool {
    let Some(at) = word.find("http://") else {
        return false;
    };
    let host = word[at + "http://".len()..]
        .split(['/', '"', '\'', ' '])
        .next()
        .unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or(host);
    let name = if host.starts_with('[') {
        host.split(']').next().map_or(host, |h| &h[1..])
    } else {
        host.split(':').next().unwrap_or(host)
    };
    !(name.is_empty()
        || name == "localhost"
        || name == "::1"
        || name.starts_with("127.")
        || name.contains('{')
        || name.contains('$'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(words: &[&str]) -> Option<String> {
        unverified_words(words).map(|(_, u)| u.text)
    }

    #[test]
    fn options_settings_and_plain_http_give_up_verification() {
        for (words, text) in [
            (&["curl", "-k", "https://x.test"][..], "-k"),
            (&["curl", "--insecure", "https://x.test"], "--insecure"),
            (
                &["wget", "--no-check-certificate", "https://x.test"],
                "--no-check-certificate",
            ),
            (
                &[
                    "git",
                    "-c",
                    "http.sslVerify=false",
                    "clone",
                    "https://x.test/r",
                ],
                "http.sslVerify=false",
            ),
            (
                &[
                    "pip",
                    "install",
                    "--extra-index-url",
                    "https://pypi.org/simple",
                    "x==1.0",
                ],
                "--extra-index-url",
            ),
            (
                &["pip", "install", "--trusted-host=pypi.internal", "x==1.0"],
                "--trusted-host=pypi.internal",
            ),
            (
                &["curl", "http://dashboard.internal/api"],
                "http://dashboard.internal/api",
            ),
            (
                &[
                    "sh",
                    "-c",
                    "export NODE_TLS_REJECT_UNAUTHORIZED=0 && node notify.js",
                ],
                "NODE_TLS_REJECT_UNAUTHORIZED=0",
            ),
            (&["sh", "-c", "curl -fsS -k https://x.test/api"], "-k"),
        ] {
            assert_eq!(found(words).as_deref(), Some(text), "{words:?}");
        }
        for words in [
            &["curl", "--cacert", "/etc/ssl/ca.pem", "https://x.test"][..],
            &["tar", "-k", "-xf", "a.tar"],
            &["sort", "-k", "2"],
            &["curl", "http://127.0.0.1:8080/health"],
            &["curl", "http://localhost/x"],
            &[
                "pip",
                "install",
                "--index-url",
                "https://pypi.internal/simple",
                "x==1.0",
            ],
            &["sh", "-c", "sort -k 2 out.txt"],
        ] {
            assert_eq!(found(words), None, "{words:?}");
        }
    }

    #[test]
    fn a_variable_of_the_environment_is_judged_by_its_value() {
        assert!(unverified_setting("NODE_TLS_REJECT_UNAUTHORIZED", "0").is_some());
        assert!(unverified_setting("NODE_TLS_REJECT_UNAUTHORIZED", "1").is_none());
        assert!(unverified_setting("GIT_SSL_NO_VERIFY", "true").is_some());
        assert!(unverified_setting("GIT_SSL_NO_VERIFY", "").is_none());
        assert!(unverified_setting("CURL_CA_BUNDLE", "").is_some());
        assert!(unverified_setting("CURL_CA_BUNDLE", "/etc/ssl/ca.pem").is_none());
        assert!(unverified_setting("GOSUMDB", "off").is_some());
        assert!(unverified_setting("PIP_INDEX_URL", "http://pypi.internal/simple").is_some());
        assert!(unverified_setting("PIP_INDEX_URL", "https://pypi.internal/simple").is_none());
        assert!(unverified_setting("NODE_EXTRA_CA_CERTS", "/etc/ssl/ca.pem").is_none());
        assert!(unverified_setting("HTTPS_PROXY", "http://egress.internal:3128").is_none());
    }
}
