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
    /// It is not JSON.
    #[error("{path} is not a JSON object: {source}")]
    NotJson {
        /// The manifest path.
        path: PathBuf,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// It is JSON, but not an object.
    #[error("{path} is not a JSON object: the top level is not an object")]
    NotAnObject {
        /// The manifest path.
        path: PathBuf,
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
        serde_json::from_slice(&bytes).map_err(|source| ManifestError::NotJson {
            path: path.clone(),
            source,
        })?;
    let Some(object) = value.as_object() else {
        return Err(ManifestError::NotAnObject { path });
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

#[cfg(test)]
mod tests {
    use std::error::Error;

    use super::*;

    #[test]
    fn a_manifest_that_is_not_json_keeps_the_parsers_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".agent.json"), b"{molt_count: 1").unwrap();
        let e = read_manifest_molt_count(dir.path()).unwrap_err();
        let source = e
            .source()
            .and_then(|s| s.downcast_ref::<serde_json::Error>());
        assert!(source.is_some_and(serde_json::Error::is_syntax), "{e:?}");
        assert!(
            e.to_string()
                .contains("is not a JSON object: key must be a string"),
            "{e}"
        );
        std::fs::write(dir.path().join(".agent.json"), b"[1]").unwrap();
        let e = read_manifest_molt_count(dir.path()).unwrap_err();
        assert!(matches!(e, ManifestError::NotAnObject { .. }), "{e:?}");
        assert!(e.source().is_none());
    }
}
