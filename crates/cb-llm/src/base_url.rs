//! Checks of a base URL before any call: it must parse as an absolute `http`/`https` URL with
//! a host, and its host is classed as local (no API key needed) or public.

use reqwest::Url;
use std::net::IpAddr;

/// Where a base URL's host is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostKind {
    /// Loopback (`localhost`, `127.0.0.0/8`, `::1`).
    Loopback,
    /// A private network: RFC 1918 and link-local addresses, IPv6 unique-local and link-local,
    /// a name without a dot (a LAN or container name such as `vllm`) and names under `.local`,
    /// `.lan`, `.internal`, `.home.arpa`.
    Private,
    /// Anything else: a public API, where a key is expected.
    Public,
}

/// Parses `url` and classes its host; the error says what is wrong in one sentence.
pub fn check_base_url(url: &str) -> Result<HostKind, String> {
    check_base_url_of("--base-url", url)
}

/// As [`check_base_url`], for the URL that the setting `flag` gives (the error names it).
pub fn check_base_url_of(flag: &str, url: &str) -> Result<HostKind, String> {
    if !url.contains("://") {
        return Err(format!(
            "{flag} {url:?} has no scheme: write it as http://{} (a local server) or https://... (a hosted API)",
            url.trim()
        ));
    }
    let u = Url::parse(url.trim()).map_err(|e| {
        format!("{flag} {url:?} is not a URL ({e}); expected e.g. http://127.0.0.1:8000/v1 or https://api.openai.com/v1")
    })?;
    if !matches!(u.scheme(), "http" | "https") {
        return Err(format!(
            "{flag} {url:?}: the scheme must be http:// or https://, not {}:",
            u.scheme()
        ));
    }
    let host = match u.host_str() {
        Some(h) if !h.is_empty() => h,
        _ => return Err(format!("{flag} {url:?} has no host")),
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    Ok(match bare.parse::<IpAddr>() {
        Ok(ip) => ip_kind(ip),
        Err(_) => name_kind(bare),
    })
}

fn ip_kind(ip: IpAddr) -> HostKind {
    match ip {
        IpAddr::V4(a) if a.is_loopback() => HostKind::Loopback,
        IpAddr::V4(a) if a.is_private() || a.is_link_local() || a.is_unspecified() => {
            HostKind::Private
        }
        IpAddr::V6(a) if a.is_loopback() => HostKind::Loopback,
        IpAddr::V6(a) => {
            let first = a.segments()[0];
            // fc00::/7 unique-local, fe80::/10 link-local.
            if (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80 || a.is_unspecified() {
                HostKind::Private
            } else {
                HostKind::Public
            }
        }
        IpAddr::V4(_) => HostKind::Public,
    }
}

fn name_kind(name: &str) -> HostKind {
    let n = name.trim_end_matches('.').to_ascii_lowercase();
    if n == "localhost" || n.ends_with(".localhost") {
        HostKind::Loopback
    } else if !n.contains('.')
        || [".local", ".lan", ".internal", ".home.arpa"]
            .iter()
            .any(|s| n.ends_with(s))
    {
        HostKind::Private
    } else {
        HostKind::Public
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_parsed_and_hosts_classed() {
        for (u, k) in [
            ("http://127.0.0.1:8000/v1", HostKind::Loopback),
            ("http://localhost:11434/v1", HostKind::Loopback),
            ("http://[::1]:8000/v1", HostKind::Loopback),
            ("http://192.168.1.20:8000/v1", HostKind::Private),
            ("http://10.0.0.5/v1", HostKind::Private),
            ("http://vllm:8000/v1", HostKind::Private),
            ("http://gpu-box.lan/v1", HostKind::Private),
            ("http://[fd00::1]/v1", HostKind::Private),
            ("https://api.openai.com/v1", HostKind::Public),
            ("https://8.8.8.8/v1", HostKind::Public),
        ] {
            assert_eq!(check_base_url(u), Ok(k), "{u}");
        }
        for bad in [
            "notaurl",
            "127.0.0.1:8000/v1",
            "ftp://host/v1",
            "http://",
            "",
        ] {
            let e = check_base_url(bad).unwrap_err();
            assert!(e.contains("--base-url"), "{bad}: {e}");
        }
    }
}
