//! `conflictbench view`: arguments, their checks (exit 2 before anything is bound or
//! written), the binding and the address printed; the server is `cb-view`'s.

use crate::flag_values::{range, whole};
use anyhow::Context;
use cb_view::index::SampleSpec;
use cb_view::state::{AppState, Settings};
use clap::Args;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// The port the viewer binds without `--port`.
pub const DEFAULT_PORT: u16 = 7878;

#[derive(Args, Debug)]
pub struct ViewArgs {
    /// A build folder (`generated`, `generated/kre/cose`) or any audited file or folder
    /// (the released KRE files included).
    pub out: PathBuf,
    /// Port to listen on (0 to 65535; 0: any free port; the address is printed).
    #[arg(long, default_value_t = DEFAULT_PORT, value_parser = whole::<u16>(range::PORT))]
    pub port: u16,
    /// Address to listen on. Anything but loopback needs a token: --token, or one printed.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The token every request must carry when --host is not loopback (at least 16 of
    /// A-Z, a-z, 0-9, '-', '_'). Default there: a random one, printed.
    #[arg(long, env = "CONFLICTBENCH_VIEW_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The build's response cache, read only, for the lineage and the spend.
    /// Default: OUT/llm-cache.sqlite.
    #[arg(long, value_name = "PATH")]
    pub cache: Option<PathBuf>,
    /// The ratings file (SQLite), the one file the viewer writes, at the first rating; it
    /// must be writable. Default: OUT/view-ratings.sqlite (beside OUT when OUT is a file);
    /// where that cannot be written, the pages only read.
    #[arg(long, value_name = "PATH")]
    pub ratings: Option<PathBuf>,
    /// Rows in the rating sample (the review sheet's: `audit --sheet --sample N`; 1 to
    /// 1000000).
    #[arg(long, default_value_t = 100, value_name = "N", value_parser = whole::<usize>(range::RATED_ROWS))]
    pub sample: usize,
    /// Seed of the rating sample (`audit --seed`; 0 to 18446744073709551615).
    #[arg(long, default_value_t = 42, value_parser = whole::<u64>(range::SEED))]
    pub seed: u64,
}

/// The checked settings, and the address to bind.
fn settings(args: &ViewArgs) -> anyhow::Result<(Settings, IpAddr)> {
    let err = |m: String| crate::config_error::config_err(m);
    if !args.out.exists() {
        return Err(err(format!("{} does not exist", args.out.display())));
    }
    let ip: IpAddr = match args.host.as_str() {
        "localhost" => IpAddr::from([127, 0, 0, 1]),
        h => h.parse().map_err(|_| {
            err(format!(
                "--host {h} is not an IP address (e.g. 127.0.0.1, 0.0.0.0, ::1)"
            ))
        })?,
    };
    let token = match (&args.token, ip.is_loopback()) {
        (Some(_), true) => {
            return Err(err(format!(
                "--token guards a --host other than loopback, and {} is loopback; drop --token, or give the --host to serve on",
                args.host
            )))
        }
        (Some(t), false) => {
            let ok = t.len() >= 16 && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !ok {
                return Err(err("--token must be at least 16 characters of A-Z, a-z, 0-9, '-' and '_'".into()));
            }
            Some(t.clone())
        }
        (None, false) => Some(cb_view::secret::new_token()),
        (None, true) => None,
    };
    let dir = if args.out.is_dir() {
        args.out.clone()
    } else {
        args.out.parent().map(PathBuf::from).unwrap_or_default()
    };
    let ratings = args
        .ratings
        .clone()
        .unwrap_or_else(|| dir.join("view-ratings.sqlite"));
    if let Some(p) = ratings
        .parent()
        .filter(|p| !p.as_os_str().is_empty() && !p.is_dir())
    {
        return Err(err(format!(
            "--ratings: the folder {} does not exist",
            p.display()
        )));
    }
    if ratings.is_dir() {
        return Err(err(format!(
            "--ratings {} names a folder: give the ratings file (SQLite) to write",
            ratings.display()
        )));
    }
    if let Some(c) = args.cache.as_ref().filter(|c| !c.is_file()) {
        return Err(err(format!(
            "--cache {}: no such file (the build's llm-cache.sqlite); leave --cache out to view a build without one",
            c.display()
        )));
    }
    let settings = Settings {
        root: args.out.clone(),
        cache: args
            .cache
            .clone()
            .unwrap_or_else(|| dir.join("llm-cache.sqlite")),
        ratings,
        sample: SampleSpec {
            size: args.sample,
            seed: args.seed,
        },
        token,
        hosts: None,
        poll: std::time::Duration::from_secs(1),
    };
    Ok((settings, ip))
}

/// The `Host` headers a browser sends to a viewer on loopback port `port` (without the port
/// where it is HTTP's own, 80).
fn loopback_hosts(port: u16) -> Vec<String> {
    let names = ["127.0.0.1", "localhost", "[::1]"];
    let mut hosts: Vec<String> = names.iter().map(|n| format!("{n}:{port}")).collect();
    if port == 80 {
        hosts.extend(names.iter().map(|n| (*n).to_owned()));
    }
    hosts
}

pub async fn run(args: ViewArgs) -> anyhow::Result<()> {
    let (settings, ip) = settings(&args)?;
    // Everything served is checked before the port is bound.
    let mut state = tokio::task::spawn_blocking(move || AppState::new(settings))
        .await
        .context("reading the files")?
        .map_err(|e| crate::config_error::config_err(e.to_string()))?;
    if let (Some(path), Some(why)) = (&args.ratings, &state.ratings.read_only) {
        return Err(crate::config_error::config_err(format!(
            "--ratings {} cannot be written: {why} (leave --ratings out to read a folder that cannot be written)",
            path.display()
        )));
    }
    let listener = match tokio::net::TcpListener::bind((ip, args.port)).await {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            return Err(crate::config_error::config_err(format!(
                "port {} on {} is in use; choose another with --port",
                args.port, args.host
            )))
        }
        Err(e) => {
            return Err(crate::config_error::config_err(format!(
                "cannot listen on {}:{}: {e}",
                args.host, args.port
            )))
        }
    };
    let port = listener.local_addr().context("the bound address")?.port();
    if ip.is_loopback() {
        state.settings.hosts = Some(loopback_hosts(port));
    }
    let token = state.settings.token.clone();
    let snap = state.snapshot();
    let shown = if ip.is_unspecified() {
        "127.0.0.1".to_owned()
    } else {
        args.host.clone()
    };
    let shown = if shown.contains(':') {
        format!("[{shown}]")
    } else {
        shown
    };
    let at = if port == 80 {
        shown
    } else {
        format!("{shown}:{port}")
    };
    let address = match &token {
        Some(t) => format!("http://{at}/?token={t}"),
        None => format!("http://{at}/"),
    };
    let ratings = match &state.ratings.read_only {
        None => format!("ratings go to {}", state.settings.ratings.display()),
        Some(why) => format!("no rating can be saved ({why}); the pages only read"),
    };
    // Written once and any error ignored: a closed stdout must not stop the server.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), format!(
        "viewing {} ({} rows, {} rejects; the audit runs behind) at {address}\n{ratings}; Ctrl-C stops\n",
        args.out.display(),
        snap.rows.len(),
        snap.domains.iter().map(|d| d.rejects.len()).sum::<usize>(),
    ).as_bytes());
    let _ = std::io::Write::flush(&mut std::io::stdout());
    drop(snap);
    cb_view::server::serve(listener, Arc::new(state), stop())
        .await
        .context("the server stopped")
}

/// Resolves at Ctrl-C or SIGTERM.
async fn stop() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(t) => t,
                Err(_) => return std::future::pending().await,
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod tests {
    use super::loopback_hosts;

    #[test]
    fn on_port_80_a_browser_sends_the_host_without_the_port() {
        let hosts = loopback_hosts(80);
        for h in ["127.0.0.1", "127.0.0.1:80", "localhost", "[::1]"] {
            assert!(hosts.iter().any(|x| x == h), "{h}: {hosts:?}");
        }
        assert!(!loopback_hosts(7878).iter().any(|x| x == "127.0.0.1"));
    }
}
