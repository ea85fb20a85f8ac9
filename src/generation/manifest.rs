//! The agent manifest `.agent.json`: where the runtime records the generation it believes is
//! current (`molt_count`).

use std::path::{Path, PathBuf};

/// `.agent.json` exists but cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// It cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The manifest path.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// It is not a JSON object.
    #[error("{path} is not a JSON object: {detail}")]
    NotAnObject {
        /// The manifest path.
        path: PathBuf,
        /// What the parser said.
        detail: String,
    },
    /// Its `molt_count` is not a JSON integer >= 0.
    #[error(
        "{path}: molt_count must be a JSON integer >= 0, found {found}; pass --molt-count to override"
    )]
    BadMoltCount {
        /// The manifest path.
        path: PathBuf,
        /// The value found.
        found: String,
    },
}

/// Reads `molt_count` from `agent_dir/.agent.json`: `None` if there is no manifest; 0 if the
/// manifest has no `molt_count` (a fresh agent, as the runtime reads it).
pub fn read_manifest_molt_count(agent_dir: &Path) -> Result<Option<u64>, ManifestError> {
    let path = agent_dir.join(".agent.json");
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(ManifestError::Read { path, source }),
    };
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| ManifestError::NotAnObject {
            path: path.clone(),
            detail: e.to_string(),
        })?;
    let Some(object) = value.as_object() else {
        return Err(ManifestError::NotAnObject {
            path,
            detail: "the top level is not an object".to_owned(),
        });
    };
    match object.get("molt_count") {
        None => Ok(Some(0)),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| ManifestError::BadMoltCount {
                path,
                found: v.to_string(),
            }),
    }
}
