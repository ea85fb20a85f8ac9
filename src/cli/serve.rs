//! `agentlog serve [PATH...]`: the local, read-only web viewer (docs/SERVE.md). Prints the
//! address with its access token on the first line of stdout (`--json`: one object with
//! `url`, `port` and `token`), then serves until interrupted.

use std::net::IpAddr;
use std::path::PathBuf;

use agentlog::serve::{ServeOptions, bind};

use super::cache::CacheArgs;
use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Failure, print_json};

/// The port used when none is given.
pub const DEFAULT_PORT: u16 = 7878;

/// The arguments of `agentlog serve`.
#[derive(clap::Args)]
pub struct Args {
    /// Transcript files or directories to serve (default: the places Claude Code, Codex and
    /// pi keep theirs).
    paths: Vec<PathBuf>,
    /// The port (0: a free one).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// The address to listen on; anything but a loopback address exposes the transcripts to
    /// the network (the token still guards them).
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Open the address in the default browser.
    #[arg(long)]
    open: bool,
    #[command(flatten)]
    cache: CacheArgs,
    /// Print the address as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<u8, Failure> {
    if !args.host.is_loopback() {
        eprintln!(
            "agentlog: warning: listening on {}: other machines can reach the viewer (the access token still guards it)",
            args.host
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::new("io_error", EXIT_FAILURE, e.to_string()))?;
    let options = ServeOptions {
        paths: args.paths.clone(),
        host: args.host,
        port: args.port,
        index_dir: args.cache.index_dir.clone(),
        no_archive: args.cache.no_archive,
    };
    runtime.block_on(async {
        let bound = bind(&options).await.map_err(|e| {
            let code = if matches!(e, agentlog::serve::ServeError::Bind { .. }) {
                EXIT_BAD_INPUT
            } else {
                EXIT_FAILURE
            };
            Failure::new("serve_failed", code, e.to_string())
        })?;
        let address = bound.address().clone();
        if args.json {
            print_json(&address)?;
        } else {
            outln!("{}", address.url);
        }
        if args.open {
            open_browser(&address.url);
        }
        // Open event streams would hold a graceful shutdown forever: they get a second.
        let deadline = async {
            shutdown().await;
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        };
        tokio::select! {
            served = bound.serve(shutdown()) => {
                served.map_err(|e| Failure::new("serve_failed", EXIT_FAILURE, e.to_string()))?;
            }
            () = deadline => {}
        }
        Ok(EXIT_OK)
    })
}

/// Completes on Ctrl-C or SIGTERM.
async fn shutdown() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        else {
            let _ = interrupt.await;
            return;
        };
        tokio::select! {
            _ = interrupt => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

/// Opens `url` with the system's opener; a failure is a warning.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    if let Err(e) = std::process::Command::new(opener)
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        eprintln!("agentlog: warning: could not open a browser ({opener}: {e})");
    }
}
