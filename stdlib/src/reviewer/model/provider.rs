//! How a model CLI reaches its API: only through the try's proxy, holding stand-ins.
//!
//! - Claude Code reads `ANTHROPIC_BASE_URL`: the proxy's URL. Its credential variable
//!   (`ANTHROPIC_API_KEY`, sent as `x-api-key`; `CLAUDE_CODE_OAUTH_TOKEN`, sent as `Authorization:
//!   Bearer`) holds a stand-in.
//! - Codex reads a provider from `$CODEX_HOME/config.toml`: the try's private `CODEX_HOME` gets
//!   one named `reviewflow` whose `base_url` is the proxy, `wire_api = "responses"`, and whose
//!   `env_key` is the credential's variable, which holds a stand-in. (Given only
//!   `OPENAI_BASE_URL`, its built-in provider tries a WebSocket transport first and retries
//!   until it times out; a provider of its own speaks plain HTTP.)
//!
//! The CLI may connect to the proxy's port, and to nothing else of its own.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::sync::Arc;

use reviewflow_engine::exec::process::ChildSpec;
use reviewflow_engine::exec::secret::SecretValue;

use super::ModelReviewer;
use super::home::TryHome;
use crate::reviewer::SecretEnv;
use crate::reviewer::kinds::ModelCli;
use crate::reviewer::proxy::{AccountPool, ModelApi, ModelProxy, Upstream};

/// The provider reviewflow writes into a try's Codex configuration.
pub(crate) const CODEX_PROVIDER: &str = "reviewflow";

/// The API of the CLI's vendor.
pub(crate) fn api(cli: ModelCli) -> Result<&'static ModelApi, String> {
    ModelApi::of_vendor(cli.vendor())
        .ok_or_else(|| format!("no model API is known for the `{}` reviewer", cli.name()))
}

/// Where the proxy of `spec`'s tries forwards: the base URL the stage declares, else the
/// vendor's API.
pub(crate) fn upstream(spec: &ModelReviewer) -> Result<Upstream, String> {
    let api = api(spec.cli)?;
    api.upstream(&spec.env)
        .map_err(|e| format!("{}: {e}", api.base_url_var))
}

/// The accounts of each credential the stage gives, for every try of the run: an account
/// skipped for its limit stays skipped.
pub(crate) fn pools(spec: &ModelReviewer) -> Vec<(String, Arc<AccountPool>)> {
    spec.secret_env.iter().map(SecretEnv::pool).collect()
}

/// Starts the proxy of one try, for the run's accounts.
pub(crate) fn start_proxy(
    spec: &ModelReviewer,
    pools: &[(String, Arc<AccountPool>)],
) -> Result<ModelProxy, String> {
    ModelProxy::start(upstream(spec)?, pools).map_err(|e| e.to_string())
}

/// `child` pointed at `proxy`: stand-ins in the credential variables, the proxy as the base
/// URL, and the proxy's port as its only network.
pub(crate) fn point_at(
    mut child: ChildSpec,
    cli: ModelCli,
    home: &TryHome,
    proxy: &ModelProxy,
) -> Result<ChildSpec, String> {
    for (var, stand_in) in proxy.stand_ins() {
        child = child.secret_env(var.clone(), SecretValue::from(stand_in.as_str()));
    }
    match cli {
        ModelCli::Claude => {
            child = child.env(api(cli)?.base_url_var, proxy.base_url());
        }
        ModelCli::Codex => {
            let env_key = proxy
                .stand_ins()
                .first()
                .map(|(var, _)| var.as_str())
                .ok_or("the reviewer has no credential")?;
            write_codex_config(home, &proxy.base_url(), env_key)?;
        }
    }
    child.confine = child.confine.take().map(|c| c.connect(proxy.port()));
    Ok(child)
}

/// The try's `config.toml`: a provider that is the proxy. It names the variable of the key,
/// never the key.
fn write_codex_config(home: &TryHome, base_url: &str, env_key: &str) -> Result<(), String> {
    // `project_doc_max_bytes = 0`: Codex loads no `AGENTS.md` of its working folder, and
    // `[skills] include_instructions = false`: it lists no skill (those of the working folder's
    // `.agents/skills` and `.codex/skills` among them). That folder is the checkout, in CI the
    // pull request's: its instruction files would reach the model outside the fence of
    // `untrusted`. The reviewer's instructions are the pipeline's prompt.
    let text = format!(
        "# Written by reviewflow for one try: the model API is reached through its proxy.\n\
         model_provider = {provider}\n\
         project_doc_max_bytes = 0\n\
         \n\
         [model_providers.{CODEX_PROVIDER}]\n\
         name = {provider}\n\
         base_url = {base_url}\n\
         env_key = {env_key}\n\
         wire_api = \"responses\"\n\
         \n\
         [skills]\n\
         include_instructions = false\n",
        provider = toml_string(CODEX_PROVIDER),
        base_url = toml_string(base_url),
        env_key = toml_string(env_key),
    );
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(home.codex_home.join("config.toml"))
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("cannot write the try's Codex configuration: {e}"))
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_strings_are_quoted() {
        assert_eq!(toml_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000A\"");
    }
}
