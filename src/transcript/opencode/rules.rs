//! `OpenCode`'s entry in the reader table: the format, its native fields and where the agent
//! keeps its data. It keeps no lines, so the entry reads none; its database and storage are
//! read by the rest of this module.

use std::path::PathBuf;

use crate::transcript::fold::{BoundaryKind, RecallError};
use crate::transcript::format::{Format, Probe};
use crate::transcript::json::Text;
use crate::transcript::reader::{Env, LineFacts, Rules, Step};

/// The `OpenCode` entry of the reader table.
pub(crate) struct OpenCode;

impl Rules for OpenCode {
    const FORMAT: Format = Format::OpenCode;
    const BOUNDARY_KINDS: &'static [BoundaryKind] = &[];
    // No line is ever parsed (`may_matter` is false): any tolerant type does.
    type Line<'a> = Text<'a>;

    fn shows(_: &Probe<'_>) -> bool {
        false
    }

    fn may_matter(_: &[u8]) -> bool {
        false
    }

    /// `$OPENCODE_DATA_DIR` (a comma-separated list) if set, else `$XDG_DATA_HOME/opencode`
    /// (when absolute), else `~/.local/share/opencode`.
    fn roots(env: &Env) -> Vec<PathBuf> {
        let dirs = env.dirs("OPENCODE_DATA_DIR");
        if !dirs.is_empty() {
            return dirs;
        }
        if let Some(xdg) = (env.var)("XDG_DATA_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
        {
            return vec![xdg.join("opencode")];
        }
        env.home
            .iter()
            .map(|h| h.join(".local").join("share").join("opencode"))
            .collect()
    }

    fn fold(_: &mut Step<'_>, _: &Text<'_>) -> Result<(), RecallError> {
        Ok(())
    }

    fn facts(_: Self::Line<'_>) -> LineFacts<'_> {
        LineFacts::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_directory_follows_the_overrides() {
        fn none(_: &str) -> Option<std::ffi::OsString> {
            None
        }
        fn xdg(n: &str) -> Option<std::ffi::OsString> {
            (n == "XDG_DATA_HOME").then(|| "/xdg".into())
        }
        fn own(n: &str) -> Option<std::ffi::OsString> {
            match n {
                "OPENCODE_DATA_DIR" => Some("/a, /b".into()),
                _ => xdg(n),
            }
        }
        let home = Some(PathBuf::from("/h"));
        let at = |var| {
            OpenCode::roots(&Env {
                home: home.clone(),
                var,
            })
        };
        assert_eq!(at(none), [PathBuf::from("/h/.local/share/opencode")]);
        assert_eq!(at(xdg), [PathBuf::from("/xdg/opencode")]);
        assert_eq!(at(own), [PathBuf::from("/a"), PathBuf::from("/b")]);
    }
}
