//! Checks of the endpoint before any work (exit 2 when they fail): a `--base-url` that is not
//! an absolute http(s) URL, and a public host without `OPENAI_API_KEY`. A loopback or private
//! host needs no key (local servers such as vLLM, llama.cpp or Ollama rarely ask for one);
//! a dry run and a replay call nothing, so they need none either.

use cb_llm::base_url::{check_base_url_of, HostKind};

/// `url`: a base URL this run would call, given by the setting `flag` (`--base-url`,
/// `--reader-base-url`, ...), which the errors name; `calls_upstream`: whether this run sends
/// requests (not a dry run, not a replay).
pub fn check_endpoint(flag: &str, url: &str, calls_upstream: bool) -> anyhow::Result<()> {
    let kind = check_base_url_of(flag, url).map_err(crate::config_error::config_err)?;
    let has_key = std::env::var("OPENAI_API_KEY").is_ok_and(|k| !k.trim().is_empty());
    if calls_upstream && kind == HostKind::Public && !has_key {
        return Err(crate::config_error::config_err(format!(
            "{url} is a public host and OPENAI_API_KEY is not set: export OPENAI_API_KEY=... \
             (it is read from the environment only), or point {flag} at a local server"
        )));
    }
    Ok(())
}
