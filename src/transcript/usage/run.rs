//! A usage run: the transcripts found under the roots, `OpenCode`'s sources read beside the
//! line transcripts, the lines answered from the run-level snapshot or read in full, and the
//! report's settings filled in.

use std::path::PathBuf;

use super::{Skipped, UsageOptions, UsageReport, default_roots, discover, read_files, zone_name};
use crate::transcript::format::Format;
use crate::transcript::opencode;
use crate::transcript::snapshot::usage_with_snapshot;
use crate::transcript::stat::StatsTaken;
use crate::transcript::store::UNINDEXED_FILE;

/// The usage report of the transcripts under `paths` (the places the agents keep theirs when
/// `paths` is empty: [`default_roots`]): every `*.jsonl` file found ([`discover`]) read
/// through its index, each message counted once across files, grouped and limited as
/// `options` say, answered from the run-level snapshot when `options.snapshot` is set.
/// `progress(done, total)` is called as files are read (not when the snapshot answers). A file
/// or directory that cannot be read is listed in [`UsageReport::skipped`] and left out.
pub fn usage(
    paths: &[PathBuf],
    options: &UsageOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> UsageReport {
    let roots = if paths.is_empty() {
        default_roots()
    } else {
        paths.to_vec()
    };
    let (files, skipped) = discover(&roots);
    usage_of_files(&roots, &files, skipped, options, progress)
}

/// The usage report of `files` (canonical, sorted as [`discover`] sorts them), found under
/// `request` (what names the run-level snapshot: the roots, and anything else that changes
/// which files a run reads); `skipped` are what the discovery could not read. The archive's
/// readers call it with the originals and the cache copies of archived sources.
pub fn usage_of_files(
    request: &[PathBuf],
    files: &[PathBuf],
    skipped: Vec<Skipped>,
    options: &UsageOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> UsageReport {
    usage_of_files_noting(
        request,
        files,
        skipped,
        options,
        progress,
        &mut StatsTaken::default(),
    )
}

/// [`usage_of_files`], noting in `seen` the `stat` the snapshot's checks took of each file.
pub(crate) fn usage_of_files_noting(
    request: &[PathBuf],
    files: &[PathBuf],
    mut skipped: Vec<Skipped>,
    options: &UsageOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
    seen: &mut StatsTaken,
) -> UsageReport {
    let mut options = options.clone();
    if !options.snapshot {
        // The snapshot sets its own (a file gets its index when it grows).
        options
            .open
            .max_unindexed_file
            .get_or_insert(UNINDEXED_FILE);
    }
    let options = &options;
    // OpenCode keeps databases, not lines: read beside the line transcripts (the snapshot
    // covers line files), from the memo of the last run when no database changed.
    let (files, opencode) = opencode::split(files);
    let extra = opencode::for_usage_kept(&opencode, options.open.index_dir.as_deref());
    let mut report = if options.snapshot {
        usage_with_snapshot(request, &files, &extra.sessions, options, progress, seen)
    } else {
        read_files(&files, &extra.sessions, options, progress)
    };
    if extra.read > 0 {
        *report.files.entry(Format::OpenCode.name()).or_default() += extra.read;
    }
    skipped.extend(
        extra
            .skipped
            .into_iter()
            .map(|(path, error)| Skipped { path, error }),
    );
    skipped.append(&mut report.skipped);
    report.skipped = skipped;
    report.by = options.by;
    report.since = options.since;
    report.until = options.until;
    report.timezone = zone_name(&options.timezone);
    report.cost_mode = options.cost;
    report.pricing = Some(options.prices.source.clone());
    report
}
