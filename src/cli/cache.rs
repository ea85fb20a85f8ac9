//! What the commands reading transcripts share about the cache directory: where their index
//! files go, and the archive's copies standing in for transcripts that are gone.

use std::path::{Path, PathBuf};

use agentlog::archive::{ArchivedCopy, default_archive_dir, gone_copies};

/// `--index-dir` and `--no-archive` of the commands that read transcripts (`transcript`,
/// `usage`, `export`, the viewer, the MCP server).
#[derive(clap::Args)]
pub struct CacheArgs {
    /// Keep transcripts' index files in DIR instead of the cache directory
    /// ($AGENTLOG_CACHE_DIR, else $XDG_CACHE_HOME/agentlog, else ~/.cache/agentlog; index
    /// files go in its transcripts/).
    // clap prints this comment as the option's help, where backticks would show.
    #[allow(clippy::doc_markdown)]
    #[arg(long, value_name = "DIR")]
    pub index_dir: Option<PathBuf>,
    /// Read the original transcripts alone, not the archived copies of those that are gone.
    #[arg(long)]
    pub no_archive: bool,
}

/// The archive to read: none with `--no-archive`, or when there is no cache directory.
pub fn archive_dir(no_archive: bool) -> Option<PathBuf> {
    (!no_archive).then(|| default_archive_dir().ok()).flatten()
}

/// The archive's copies (in the cache directory) of the transcripts under `paths` whose
/// files are gone; none when the archive cannot be read, which is said on stderr as "the
/// archive was not `{verb}`". The archive's complaints about single files go to stderr too.
pub fn archived_copies(
    paths: &[PathBuf],
    index_dir: Option<&Path>,
    verb: &str,
) -> Vec<ArchivedCopy> {
    let Ok(dir) = default_archive_dir() else {
        return Vec::new();
    };
    match gone_copies(paths, &dir, index_dir) {
        Ok((copies, problems)) => {
            for p in problems {
                eprintln!("agentlog: archive: {p}");
            }
            copies
        }
        Err(e) => {
            eprintln!("agentlog: the archive was not {verb}: {e}");
            Vec::new()
        }
    }
}
