//! `agentlog serve`: a local, read-only web viewer over the transcripts agentlog reads
//! (docs/SERVE.md).
//!
//! A presenter: every answer is a library call ([`usage`](crate::transcript::usage),
//! [`read_report`](crate::transcript::read_report),
//! `crate::search::TranscriptSearch`) or a bounded read of a window of a
//! transcript's lines; the pages are static HTML, CSS and JavaScript embedded in the binary
//! that render every transcript byte as text.
//!
//! * [`guard`]: what every request must pass (method, `Host`, the per-run token) and the
//!   headers every answer carries (the Content Security Policy).
//! * [`catalog`]: the sessions found, with agent, title, start and end beside their usage.
//! * [`window`]: windows of a transcript's lines read from a byte offset, forward or backward.
//! * [`api`] and [`follow`]: the JSON API and the server-sent events of a growing transcript.
//! * [`pages`]: the embedded pages and assets.
//!
//! Nothing is written beside a transcript: derived state goes to the per-user cache directory
//! as for every other command.

pub mod api;
pub mod catalog;
pub mod follow;
pub mod guard;
pub mod pages;
pub mod reply;
pub mod window;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::Router;
use serde::Serialize;

use crate::search::{SearchConfig, TranscriptSearch};
use catalog::Catalog;
use guard::Guard;

/// What to serve and where.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Transcript files or directories (default: the places the agents keep theirs).
    pub paths: Vec<PathBuf>,
    /// The address to bind (default 127.0.0.1; anything else is the caller's explicit choice).
    pub host: IpAddr,
    /// The port (0: a free one).
    pub port: u16,
    /// Where index files go (default: the per-user cache directory).
    pub index_dir: Option<PathBuf>,
    /// Read the original transcripts alone, not the archived sessions they no longer hold
    /// (`--no-archive`).
    pub no_archive: bool,
}

impl Default for ServeOptions {
    fn default() -> ServeOptions {
        ServeOptions {
            paths: Vec::new(),
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            index_dir: None,
            no_archive: false,
        }
    }
}

/// Why the viewer cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The address could not be bound.
    #[error("binding {addr} failed: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The operating system gave no random bytes for the token.
    #[error("no random source for the access token: {0}")]
    Random(String),
    /// The server stopped on an I/O error.
    #[error("serving failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Where a bound viewer listens: `agentlog serve --json` prints it.
#[derive(Clone, Debug, Serialize)]
pub struct Address {
    /// The URL to open, with the access token.
    pub url: String,
    /// The port bound.
    pub port: u16,
    /// The per-run access token.
    pub token: String,
}

/// What every handler shares.
pub(crate) struct State {
    pub(crate) catalog: Catalog,
    pub(crate) search: Mutex<Option<TranscriptSearch>>,
    pub(crate) roots: Vec<PathBuf>,
    pub(crate) index_dir: Option<PathBuf>,
    /// The archive read beside the originals (`None`: the originals alone).
    pub(crate) archive_dir: Option<PathBuf>,
}

/// A viewer bound to its port, not yet serving.
pub struct Bound {
    listener: tokio::net::TcpListener,
    router: Router,
    address: Address,
}

impl Bound {
    /// Where it listens.
    pub fn address(&self) -> &Address {
        &self.address
    }

    /// Serves until `shutdown` completes.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(shutdown)
            .await?;
        Ok(())
    }
}

/// Binds the viewer (in a tokio runtime): the port, a fresh token, and the catalog of sessions
/// read once before the address is returned.
pub async fn bind(options: &ServeOptions) -> Result<Bound, ServeError> {
    let addr = SocketAddr::new(options.host, options.port);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let port = listener.local_addr()?.port();
    let token = guard::new_token().map_err(|e| ServeError::Random(e.to_string()))?;
    let roots = if options.paths.is_empty() {
        crate::transcript::default_roots()
    } else {
        options.paths.clone()
    };
    let archive_dir = (!options.no_archive)
        .then(|| crate::archive::default_archive_dir().ok())
        .flatten();
    let catalog = Catalog::new(
        roots.clone(),
        options.index_dir.clone(),
        archive_dir.clone(),
    );
    let first = catalog.clone();
    tokio::task::spawn_blocking(move || first.refresh())
        .await
        .map_err(|e| ServeError::Io(std::io::Error::other(e.to_string())))?;
    let search = TranscriptSearch::new(options.index_dir.clone(), SearchConfig::default()).ok();
    let state = Arc::new(State {
        catalog,
        search: Mutex::new(search),
        roots,
        index_dir: options.index_dir.clone(),
        archive_dir,
    });
    let guard = Arc::new(Guard::new(options.host, port, token.clone()));
    let router = pages::routes()
        .merge(api::routes())
        .with_state(state)
        .layer(axum::middleware::from_fn_with_state(guard, guard::check));
    let shown = match options.host {
        IpAddr::V6(ip) => format!("[{ip}]"),
        IpAddr::V4(ip) => ip.to_string(),
    };
    Ok(Bound {
        listener,
        router,
        address: Address {
            url: format!("http://{shown}:{port}/?token={token}"),
            port,
            token,
        },
    })
}
