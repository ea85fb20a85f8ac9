//! What the server may read: the transcript paths, agent directories and session stores it
//! was started with. Every path argument is resolved (symbolic links followed) and must lie
//! inside one of them; nothing else on the machine is reachable through a tool.

use std::path::{Path, PathBuf};

use super::error::ToolError;
use crate::transcript::{default_roots, discover};

/// The sources the server answers from.
#[derive(Clone, Debug, Default)]
pub struct McpConfig {
    /// Transcript files or directories (empty: the places the supported agents keep theirs,
    /// as `usage` finds them).
    pub transcripts: Vec<PathBuf>,
    /// Agent directories (`DIR/logs/events.jsonl`) the `status` tool may read.
    pub agent_dirs: Vec<PathBuf>,
    /// Session stores the `search`, `read_session` and `list_sessions` tools may read.
    pub stores: Vec<PathBuf>,
    /// Where index files go (default: the per-user cache directory).
    pub index_dir: Option<PathBuf>,
    /// Read the original transcripts alone, not the archived sessions they no longer hold
    /// (`--no-archive`).
    pub no_archive: bool,
}

/// The configured sources, resolved once at start-up.
#[derive(Debug)]
pub(crate) struct Scope {
    /// The transcript paths to hand to the library (as configured, or the default roots).
    pub(crate) transcripts: Vec<PathBuf>,
    /// Their canonical forms: a transcript argument must lie in one.
    roots: Vec<PathBuf>,
    agent_dirs: Vec<PathBuf>,
    stores: Vec<PathBuf>,
}

fn canonical(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect()
}

impl Scope {
    pub(crate) fn new(config: &McpConfig) -> Scope {
        let transcripts = if config.transcripts.is_empty() {
            default_roots()
        } else {
            config.transcripts.clone()
        };
        Scope {
            roots: canonical(&transcripts),
            transcripts,
            agent_dirs: canonical(&config.agent_dirs),
            stores: canonical(&config.stores),
        }
    }

    /// A transcript file named by an argument, if it lies inside the transcript sources.
    pub(crate) fn transcript_file(&self, arg: &str) -> Result<PathBuf, ToolError> {
        let path = resolve(arg)?;
        if !path.is_file() {
            return Err(ToolError::bad("not_a_file", format!("{arg} is not a file")));
        }
        inside(&path, &self.roots, arg, "the transcript sources")
    }

    /// A transcript file named by an argument that no longer exists (the archive may hold
    /// it): its folder resolved, its name kept, inside the configured transcript paths.
    pub(crate) fn gone_transcript(&self, arg: &str) -> Result<PathBuf, ToolError> {
        let path = Path::new(arg);
        let Some(name) = path.file_name() else {
            return Err(ToolError::bad("not_found", format!("{arg} is not a file")));
        };
        let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
        let folder = resolve(&folder.unwrap_or(Path::new(".")).to_string_lossy())?;
        inside(
            &folder.join(name),
            &self.roots,
            arg,
            "the transcript sources",
        )
    }

    /// An agent directory named by an argument, if it lies inside a configured one.
    pub(crate) fn agent_dir(&self, path: &Path, arg: &str) -> Result<PathBuf, ToolError> {
        inside(path, &self.agent_dirs, arg, "the agent directories")
    }

    /// A configured store, by its path as given or resolved.
    pub(crate) fn store(&self, arg: &str) -> Result<PathBuf, ToolError> {
        let path = resolve(arg)?;
        if self.stores.contains(&path) {
            Ok(path)
        } else {
            Err(ToolError::bad(
                "outside_sources",
                format!("{arg} is not one of the session stores this server was started with"),
            ))
        }
    }

    /// The session stores configured, resolved.
    pub(crate) fn stores(&self) -> &[PathBuf] {
        &self.stores
    }

    /// The main transcripts (not subagents') of the session with this id.
    pub(crate) fn session_files(&self, id: &str) -> Vec<PathBuf> {
        let (files, _) = discover(&self.transcripts);
        files
            .into_iter()
            .filter(|f| f.file_stem().is_some_and(|s| *s == *id))
            .filter(|f| {
                f.parent()
                    .and_then(Path::file_name)
                    .is_none_or(|n| n != "subagents")
            })
            .collect()
    }
}

/// An argument as a canonical path.
pub(crate) fn resolve(arg: &str) -> Result<PathBuf, ToolError> {
    std::fs::canonicalize(arg)
        .map_err(|e| ToolError::bad("not_found", format!("cannot resolve {arg}: {e}")))
}

fn inside(path: &Path, roots: &[PathBuf], arg: &str, what: &str) -> Result<PathBuf, ToolError> {
    if roots.iter().any(|root| path.starts_with(root)) {
        Ok(path.to_path_buf())
    } else {
        Err(ToolError::bad(
            "outside_sources",
            format!("{arg} is outside {what} this server was started with"),
        ))
    }
}
