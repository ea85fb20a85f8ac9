//! The run-level usage snapshot: what a `usage` run over a set of roots added up, per file,
//! after the cross-file merge, kept in the cache directory so that the next run checks each
//! file in O(1) and reads only what grew or was added. The rules: docs/TRANSCRIPTS.md, "The
//! usage snapshot".
//!
//! Per file it holds the coverage (end, head and tail windows, running crc) the answer was
//! made of, the file's own tally by (quarter-hour, model), and what the merge moved in or out of
//! it (a signed correction). Beside them, a sorted map from a hash of every merge key (Claude
//! Code message ids, pi entry ids: any id a format dedups by) to the one file holding it, or
//! to "several". A grown file whose new lines carry only keys no other file holds changes no
//! merge: its new own tally is its answer, its correction stays; an added file is one grown
//! from nothing. Anything else (a file removed, rewritten or truncated, a new line carrying a
//! key another file holds, a damaged or foreign snapshot) takes the full path, which writes the
//! snapshot again and gives no file a new index (a file gets one when it grows).

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::cache::{default_index_dir, fnv};
use super::fold::{BucketKey, Fold, Span, UNKNOWN_MODEL, UNKNOWN_QUARTER};
use super::format::Format;
use super::stat::{Stat, StatsTaken};
use super::store::{OpenOptions, Transcript, UNINDEXED_FILE, open};
use super::tally::{TALLY_COUNTS, Tally};
use super::usage::merge::{FastMap, Merged, read_and_merge};
use super::usage::{
    Extra, Grouper, Skipped, SnapshotOutcome, UsageOptions, UsageReport, read_by_lines, read_files,
    session_of,
};
use crate::log::{Coverage, CoverageCheck};
use crate::transcript::path_order;

mod file;

use file::{KeysSeal, keys_file, read_keys, read_snapshot, write_snapshot};

/// The holder of a key several files hold.
const SEVERAL: u32 = u32::MAX;

/// A tally that may go below zero, count by count ([`Tally::counts`]): what the merge took
/// out of (or put into) a file's bucket.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Delta([i64; TALLY_COUNTS]);

impl Default for Delta {
    fn default() -> Delta {
        Delta([0; TALLY_COUNTS])
    }
}

/// A (quarter-hour, model number) bucket: quarter-hours since the epoch (`UNKNOWN_QUARTER` for
/// unknown).
type QuarterKey = (i64, u32);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct FileEntry {
    path: Vec<u8>,
    format: Format,
    coverage: Coverage,
    /// `stat` of the file when its windows last matched its coverage, if that was settled.
    stat: Option<Stat>,
    own: Vec<(QuarterKey, Tally)>,
    correction: Vec<(QuarterKey, Delta)>,
    /// The span of each quarter-hour's message times, sorted by quarter-hour (for blocks).
    spans: Vec<(i64, Span)>,
}

/// The snapshot file's payload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Snapshot {
    /// What the run was asked (roots and reading options): another request's file is foreign.
    request: Vec<u8>,
    /// The files read, in path order.
    files: Vec<FileEntry>,
    /// The files that could not be read, in path order.
    skipped: Vec<Vec<u8>>,
    /// Model names, by the number buckets use.
    models: Vec<String>,
    /// Messages of later files merged into earlier ones.
    duplicates: u64,
    /// The keys file written with it: every merge key's hash and the file holding it
    /// ([`SEVERAL`] for more than one), sorted by hash, each hash once.
    keys: KeysSeal,
}

/// A usage report over `files` (found under `roots`), answered from the run-level snapshot
/// when it can be, by reading every index otherwise (then the snapshot is written again). The
/// answer is the same either way; [`UsageReport::snapshot`] says which it was.
/// The `stat` taken of each file (as it was checked, or opened to be read) is noted in `seen`.
pub(crate) fn usage_with_snapshot(
    roots: &[PathBuf],
    files: &[PathBuf],
    extra: Extra<'_>,
    options: &UsageOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
    seen: &mut StatsTaken,
) -> UsageReport {
    let Some(dir) = options.open.index_dir.clone().or_else(default_index_dir) else {
        let report = read_files(files, extra, options, progress);
        let reason = "no cache directory".to_owned();
        return answered(report, SnapshotOutcome::Unavailable { reason });
    };
    let request = request_of(roots, &options.open);
    let path = snapshot_file(&dir, &request);
    let reason = match read_snapshot(&path, &request) {
        Ok(snapshot) => match warm(snapshot, &path, files, extra, options, seen) {
            Ok((report, outcome, changed)) => {
                if let Some((mut snapshot, keys)) = changed {
                    // The answer stands even if the snapshot cannot be kept.
                    let _ = write_snapshot(&dir, &path, &mut snapshot, keys.as_deref());
                }
                return answered(report, outcome);
            }
            Err(reason) => reason,
        },
        Err(reason) => reason,
    };
    let (report, mut snapshot, keys) = full(files, extra, options, progress, request, seen);
    let outcome = match write_snapshot(&dir, &path, &mut snapshot, Some(&keys)) {
        Ok(()) => SnapshotOutcome::Rebuilt { reason },
        Err(e) => SnapshotOutcome::Unavailable {
            reason: format!("cannot write {}: {e}", path.display()),
        },
    };
    answered(report, outcome)
}

/// `report`, saying how the snapshot answered it.
fn answered(mut report: UsageReport, outcome: SnapshotOutcome) -> UsageReport {
    report.snapshot = outcome;
    report
}

/// The bytes naming a request: the roots (canonical, sorted) and what changes how files read.
fn request_of(roots: &[PathBuf], open: &OpenOptions) -> Vec<u8> {
    let mut roots: Vec<PathBuf> = roots
        .iter()
        .map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| r.clone()))
        .collect();
    roots.sort();
    roots.dedup();
    let mut out = format!(
        "usage-snapshot\0format={}\0max_line={}\0",
        open.format.map_or("auto", Format::name),
        open.max_line
    )
    .into_bytes();
    for root in roots {
        out.extend_from_slice(root.as_os_str().as_bytes());
        out.push(0);
    }
    out
}

/// The snapshot file of a request in the index directory `dir`.
fn snapshot_file(dir: &Path, request: &[u8]) -> PathBuf {
    dir.join(format!("usage-{:016x}.snapshot", fnv(&[request])))
}

/// The hash a merge key is filed under: keys of different formats never merge.
fn key_hash(format: Format, id: &str) -> u64 {
    fnv(&[format.name().as_bytes(), b"\0", id.as_bytes()])
}

/// The merge keys a transcript read with its ids holds: every id its format dedups by, a
/// superset of what the cross-file merge joins on (a key listed but never merged can only
/// send a run to the full path).
fn keys_of(t: &Transcript) -> impl Iterator<Item = &str> {
    t.dedup.iter().flat_map(|d| {
        d.messages
            .keys()
            .map(String::as_str)
            .chain(d.entries.keys().map(String::as_str))
    })
}

/// The merge keys the lines of `bytes` carry.
fn keys_in(format: Format, bytes: &[u8]) -> Vec<u64> {
    let mut fold = Fold::new(format);
    fold.lines(0, bytes);
    fold.dedup
        .messages
        .keys()
        .chain(fold.dedup.entries.keys())
        .map(|id| key_hash(format, id))
        .collect()
}

/// Numbers model names across files.
#[derive(Default)]
struct Models {
    names: Vec<String>,
    numbers: HashMap<String, u32>,
}

impl Models {
    fn number(&mut self, name: &str) -> u32 {
        if let Some(&n) = self.numbers.get(name) {
            return n;
        }
        let Ok(n) = u32::try_from(self.names.len()) else {
            return UNKNOWN_MODEL;
        };
        if n == UNKNOWN_MODEL {
            return UNKNOWN_MODEL;
        }
        self.names.push(name.to_owned());
        self.numbers.insert(name.to_owned(), n);
        n
    }
}

/// A file's quarter-hour buckets by (quarter-hour, global model number); empty tallies are
/// left out, as a report leaves them out. Kept by quarter-hour (not by day) so that a report
/// cuts days in any zone and finds billing blocks from the snapshot alone.
fn by_quarter(
    buckets: &HashMap<BucketKey, Tally>,
    names: &[String],
    models: &mut Models,
) -> BTreeMap<QuarterKey, Tally> {
    let mut out: BTreeMap<QuarterKey, Tally> = BTreeMap::new();
    for (&(quarter, model), tally) in buckets {
        if tally.is_empty() {
            continue;
        }
        let number = names
            .get(model as usize)
            .map_or(UNKNOWN_MODEL, |name| models.number(name));
        out.entry((quarter, number)).or_default().add(tally);
    }
    out
}

/// A file's spans of message times, sorted by quarter-hour.
fn spans_of(t: &Transcript) -> Vec<(i64, Span)> {
    let mut spans: Vec<(i64, Span)> = t
        .dedup
        .as_ref()
        .map(|d| d.spans.iter().map(|(q, s)| (*q, *s)).collect())
        .unwrap_or_default();
    spans.sort_unstable_by_key(|(q, _)| *q);
    spans
}

fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `after - before`, bucket by bucket, leaving out the buckets where they are equal.
fn correction(
    before: &BTreeMap<QuarterKey, Tally>,
    after: &BTreeMap<QuarterKey, Tally>,
) -> Vec<(QuarterKey, Delta)> {
    let zero = Tally::default();
    let mut keys: Vec<&QuarterKey> = before.keys().chain(after.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|key| {
            let b = before.get(key).unwrap_or(&zero);
            let a = after.get(key).unwrap_or(&zero);
            if a == b {
                return None;
            }
            let mut delta = Delta::default();
            for (d, (x, y)) in delta
                .0
                .iter_mut()
                .zip(a.counts().into_iter().zip(b.counts()))
            {
                *d = signed(x).saturating_sub(signed(y));
            }
            Some((*key, delta))
        })
        .collect()
}

/// `own + delta`, each count floored at zero (`None` if that does not hold together).
fn corrected(own: &Tally, delta: &Delta) -> Option<Tally> {
    let mut counts = own.counts();
    for (c, d) in counts.iter_mut().zip(delta.0) {
        let sum = i128::from(*c) + i128::from(d);
        *c = u64::try_from(sum.max(0)).unwrap_or(u64::MAX);
    }
    Tally::from_counts(counts)
}

/// The full path: every file read and merged, and the snapshot of that answer with its keys.
fn full(
    files: &[PathBuf],
    extra: Extra<'_>,
    options: &UsageOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
    request: Vec<u8>,
    seen: &mut StatsTaken,
) -> (UsageReport, Snapshot, Vec<(u64, u32)>) {
    // Every file is read with its merge keys (ids) already. A file with no index yet is
    // folded whole and given none (unless the caller set a limit): the snapshot answers for
    // it until it grows, and only a file that grows (an active session) gets the index that
    // catches it up, in `warm`.
    let mut options = options.clone();
    options.open.max_unindexed_file.get_or_insert(u64::MAX);
    let options = &options;
    let merged = read_and_merge(files, options, progress, true);
    let mut models = Models::default();
    let mut entries = Vec::with_capacity(merged.read.len());
    let mut holders: FastMap<u64, u32> = FastMap::default();
    let empty = HashMap::new();
    for (i, t) in merged.read.iter().enumerate() {
        let own = by_quarter(
            merged.own.get(i).unwrap_or(&empty),
            &t.summary.models,
            &mut models,
        );
        let after = by_quarter(
            merged.buckets.get(i).unwrap_or(&empty),
            &t.summary.models,
            &mut models,
        );
        let number = u32::try_from(i).unwrap_or(SEVERAL);
        for id in keys_of(t) {
            holders
                .entry(key_hash(t.format, id))
                .and_modify(|h| {
                    if *h != number {
                        *h = SEVERAL;
                    }
                })
                .or_insert(number);
        }
        seen.note(t.path.as_os_str().as_bytes(), t.opened);
        entries.push(FileEntry {
            path: t.path.as_os_str().as_bytes().to_vec(),
            format: t.format,
            coverage: t.coverage,
            // The stat taken as the file was opened, before it was read: the next run trusts
            // it only while the file's stat is unchanged, which any change after it prevents.
            stat: (t.opened.len == t.coverage.end && t.opened.settled()).then_some(t.opened),
            correction: correction(&own, &after),
            own: own.into_iter().collect(),
            spans: spans_of(t),
        });
    }
    // The files' merge state is many small allocations, slower to free than the rest of this
    // answer takes: another thread frees it meanwhile.
    let Merged {
        mut report,
        read,
        own,
        buckets,
    } = merged;
    drop_aside((read, own, buckets));
    let mut keys: Vec<(u64, u32)> = holders.into_iter().collect();
    keys.sort_unstable();
    let mut skipped: Vec<Vec<u8>> = report
        .skipped
        .iter()
        .map(|s| s.path.as_os_str().as_bytes().to_vec())
        .collect();
    skipped.sort_by(|a, b| crate::transcript::path_order(a, b));
    skipped.dedup();
    let snapshot = Snapshot {
        request,
        files: entries,
        skipped,
        models: models.names,
        duplicates: report.cross_file_duplicates,
        keys: KeysSeal::default(),
    };
    answer(&snapshot, extra, options, &mut report);
    (report, snapshot, keys)
}

/// Drops `value` on a thread of its own (here, if none can be started).
fn drop_aside<T: Send + 'static>(value: T) {
    // A failed spawn drops the closure, and `value` with it, here.
    let _ = std::thread::Builder::new().spawn(move || drop(value));
}

/// Fills the report's rows, file counts and duplicates from the snapshot (and the usage read
/// beside the line transcripts).
fn answer(snapshot: &Snapshot, extra: Extra<'_>, options: &UsageOptions, report: &mut UsageReport) {
    let mut rows = Grouper::new(options);
    rows.add_extra(extra);
    let zero = Tally::default();
    report.files.clear();
    for f in &snapshot.files {
        *report.files.entry(f.format.name()).or_default() += 1;
        let path = PathBuf::from(std::ffi::OsString::from_vec(f.path.clone()));
        let (session, project) = session_of(&path, f.format);
        rows.add_spans(f.format, f.spans.iter().map(|(q, s)| (q, s)));
        let mut buckets: BTreeMap<QuarterKey, Tally> = f.own.iter().copied().collect();
        for (key, delta) in &f.correction {
            let own = buckets.get(key).unwrap_or(&zero);
            // A correction that does not hold together is left out (a forged snapshot).
            if let Some(value) = corrected(own, delta) {
                buckets.insert(*key, value);
            }
        }
        for ((quarter, model), tally) in &buckets {
            let model_name = snapshot
                .models
                .get(*model as usize)
                .map_or("unknown", String::as_str);
            rows.add(
                (&session, &project),
                f.format,
                (*quarter, model_name),
                tally,
            );
        }
    }
    report.cross_file_duplicates = snapshot.duplicates;
    rows.finish(report);
}

/// How a file stands against its snapshot entry.
enum Standing {
    /// As it was; `record`: its stat (taken with the check) differs from the recorded one and
    /// is worth recording.
    Current {
        record: bool,
    },
    Grew,
}

/// Checks every snapshot entry against its file, in a few threads; the first file that is
/// neither as it was nor grown is the reason to take the full path. With each standing, the
/// file's `stat`.
fn check_all(entries: &[FileEntry], threads: usize) -> Result<Vec<(Standing, Stat)>, String> {
    let check = |f: &FileEntry| -> Result<(Standing, Stat), String> {
        let path = PathBuf::from(std::ffi::OsString::from_vec(f.path.clone()));
        let unreadable = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
        // Taken before the file is read: a change after it changes mtime or ctime.
        let taken = std::time::SystemTime::now();
        let meta = std::fs::metadata(&path).map_err(unreadable)?;
        let now = Stat::of(&meta, taken);
        if let Some(stat) = &f.stat
            && stat.len == f.coverage.end
            && stat.same_file(&now)
        {
            return Ok((Standing::Current { record: false }, now));
        }
        let file = File::open(&path).map_err(unreadable)?;
        match f.coverage.check(&file).map_err(unreadable)? {
            CoverageCheck::Current { .. } => {
                let record = now.len == f.coverage.end && now.settled() && f.stat != Some(now);
                Ok((Standing::Current { record }, now))
            }
            CoverageCheck::Grew { .. } => Ok((Standing::Grew, now)),
            other => Err(format!(
                "{} changed ({})",
                path.display(),
                serde_json::to_value(other)
                    .ok()
                    .and_then(|v| v.get("state").and_then(|s| s.as_str()).map(str::to_owned))
                    .unwrap_or_default()
            )),
        }
    };
    let threads = match threads {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        n => n,
    }
    .clamp(1, entries.len().max(1));
    let chunk = entries.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = entries
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(check).collect::<Result<Vec<_>, _>>()))
            .collect();
        let mut out = Vec::with_capacity(entries.len());
        for handle in handles {
            let part = handle
                .join()
                .map_err(|_| "a checking thread stopped".to_owned())??;
            out.extend(part);
        }
        Ok(out)
    })
}

/// What the warm path changed: the snapshot, and its keys if they changed too.
type Changed = Option<(Snapshot, Option<Vec<(u64, u32)>>)>;

/// The warm path: the answer from the snapshot in `path`, after catching up the files that
/// grew and reading those added since (only then are the keys read). `Err` says why the full
/// path must answer instead. With the answer, what to write if the snapshot changed.
fn warm(
    mut snapshot: Snapshot,
    path: &Path,
    files: &[PathBuf],
    extra: Extra<'_>,
    options: &UsageOptions,
    seen: &mut StatsTaken,
) -> Result<(UsageReport, SnapshotOutcome, Changed), String> {
    let added = added_since(&snapshot, files)?;
    let standings = check_all(&snapshot.files, options.threads)?;
    // Stats newly settled are recorded: the next run need not read those files' windows.
    let mut changed = false;
    for (entry, (standing, now)) in snapshot.files.iter_mut().zip(&standings) {
        if let Standing::Current { record: true } = standing {
            entry.stat = Some(*now);
            changed = true;
        }
        seen.note(&entry.path, *now);
    }
    let mut report = UsageReport::default();
    for path in &snapshot.skipped {
        let path = PathBuf::from(std::ffi::OsString::from_vec(path.clone()));
        match open(&path, &options.open) {
            Ok(_) => return Err(format!("{} can be read now", path.display())),
            Err(error) => report.skipped.push(Skipped { path, error }),
        }
    }
    let mut grown: Vec<usize> = standings
        .iter()
        .enumerate()
        .filter(|(_, (s, _))| matches!(s, Standing::Grew))
        .map(|(i, _)| i)
        .collect();
    if grown.is_empty() && added.is_empty() {
        answer(&snapshot, extra, options, &mut report);
        return Ok((
            report,
            SnapshotOutcome::Current,
            changed.then_some((snapshot, None)),
        ));
    }
    let mut keys = read_keys(&keys_file(path), snapshot.keys, snapshot.files.len())?;
    // An added file is one grown from nothing: it takes its place in path order, and the
    // files after it (and the keys they hold) are numbered again.
    let fresh = insert_added(&mut snapshot.files, &added, &mut grown, &mut keys)?;
    grown.extend(&fresh);
    grown.sort_unstable();
    let open_options = OpenOptions {
        buckets_from: Some(UNKNOWN_QUARTER),
        // A grown file past this size gets an index, to catch up in O(new bytes) next time.
        max_unindexed_file: Some(options.open.max_unindexed_file.unwrap_or(UNINDEXED_FILE)),
        ..options.open.clone()
    };
    let mut models = Models {
        numbers: snapshot
            .models
            .iter()
            .enumerate()
            .filter_map(|(i, m)| Some((m.clone(), u32::try_from(i).ok()?)))
            .collect(),
        names: std::mem::take(&mut snapshot.models),
    };
    // Keys first seen in a grown file, and which one: two grown files may not share one.
    let mut new_keys: HashMap<u64, u32> = HashMap::new();
    for &i in &grown {
        let number = u32::try_from(i).map_err(|_| "too many files".to_owned())?;
        let Some(entry) = snapshot.files.get_mut(i) else {
            return Err("a snapshot entry went missing".to_owned());
        };
        let path = PathBuf::from(std::ffi::OsString::from_vec(entry.path.clone()));
        let t = open(&path, &open_options).map_err(|e| format!("{}: {e}", path.display()))?;
        *report
            .index_outcomes
            .entry(t.outcome.code().to_owned())
            .or_default() += 1;
        let new = new_bytes(&path, &entry.coverage, &t)?;
        if fresh.contains(&i) {
            entry.format = t.format;
            seen.note(&entry.path, t.opened);
        } else if t.format != entry.format {
            return Err(format!("{} reads as another format now", path.display()));
        }
        for hash in keys_in(t.format, &new) {
            match keys.binary_search_by_key(&hash, |&(h, _)| h) {
                Ok(at) if keys.get(at).is_some_and(|&(_, h)| h == number) => {}
                Ok(_) => {
                    return Err(format!(
                        "{} grew with a message another file holds",
                        path.display()
                    ));
                }
                Err(_) => {
                    if *new_keys.entry(hash).or_insert(number) != number {
                        return Err("two files grew with the same message".to_owned());
                    }
                }
            }
        }
        let empty = HashMap::new();
        let buckets = t.dedup.as_ref().map_or(&empty, |d| &d.buckets);
        let own: Vec<(QuarterKey, Tally)> = by_quarter(buckets, &t.summary.models, &mut models)
            .into_iter()
            .collect();
        // A torn line alone changes nothing worth writing.
        let spans = spans_of(&t);
        changed |= own != entry.own || t.coverage != entry.coverage || spans != entry.spans;
        entry.own = own;
        entry.spans = spans;
        entry.coverage = t.coverage;
        entry.stat = None;
    }
    snapshot.models = models.names;
    let keys = (!fresh.is_empty() || !new_keys.is_empty()).then(|| {
        keys.extend(new_keys);
        keys.sort_unstable();
        keys
    });
    answer(&snapshot, extra, options, &mut report);
    let outcome = SnapshotOutcome::CaughtUp { files: grown.len() };
    changed |= !fresh.is_empty();
    changed |= keys.is_some();
    Ok((report, outcome, changed.then_some((snapshot, keys))))
}

/// The files in `files` (sorted as discovery sorts them) that the snapshot has not seen,
/// in order; `Err` if one it has seen (read or skipped) is gone.
fn added_since(snapshot: &Snapshot, files: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut known = snapshot.files.iter().map(|f| f.path.as_slice()).peekable();
    let mut skipped_known = snapshot.skipped.iter().map(Vec::as_slice).peekable();
    let mut added = Vec::new();
    for file in files {
        let bytes = file.as_os_str().as_bytes();
        if known.peek() == Some(&bytes) {
            known.next();
        } else if skipped_known.peek() == Some(&bytes) {
            skipped_known.next();
        } else if !read_by_lines(file) {
            // A whole document (or database) is read by its own rules, not caught up.
            return Err(format!("{} was added", file.display()));
        } else {
            added.push(file.clone());
        }
    }
    if known.peek().is_some() || skipped_known.peek().is_some() {
        return Err("files were removed".to_owned());
    }
    Ok(added)
}

/// Puts an empty entry for each of `added` in its place among `entries` (path order), and
/// numbers again what names entries by number: the `grown` ones and the `keys`' holders.
/// Returns the new entries' numbers.
fn insert_added(
    entries: &mut Vec<FileEntry>,
    added: &[PathBuf],
    grown: &mut [usize],
    keys: &mut [(u64, u32)],
) -> Result<Vec<usize>, String> {
    if added.is_empty() {
        return Ok(Vec::new());
    }
    let old = std::mem::take(entries);
    let mut renumber = Vec::with_capacity(old.len());
    let mut fresh = Vec::with_capacity(added.len());
    let mut added = added.iter().peekable();
    for entry in old {
        while let Some(path) =
            added.next_if(|p| path_order(p.as_os_str().as_bytes(), &entry.path).is_lt())
        {
            fresh.push(entries.len());
            entries.push(empty_entry(path));
        }
        renumber.push(u32::try_from(entries.len()).map_err(|_| "too many files".to_owned())?);
        entries.push(entry);
    }
    for path in added {
        fresh.push(entries.len());
        entries.push(empty_entry(path));
    }
    let moved = |n: usize| renumber.get(n).map(|&m| m as usize);
    for g in grown.iter_mut() {
        *g = moved(*g).ok_or("a snapshot entry went missing")?;
    }
    for (_, holder) in keys.iter_mut() {
        if *holder != SEVERAL {
            *holder = *renumber
                .get(*holder as usize)
                .ok_or("the snapshot's keys name a file it does not hold")?;
        }
    }
    Ok(fresh)
}

/// The entry of a file not read yet: it covers nothing (its format is set once it is read).
fn empty_entry(path: &Path) -> FileEntry {
    FileEntry {
        path: path.as_os_str().as_bytes().to_vec(),
        format: Format::ClaudeCode,
        coverage: Coverage::default(),
        stat: None,
        own: Vec::new(),
        correction: Vec::new(),
        spans: Vec::new(),
    }
}

/// The bytes an answer covers beyond the snapshot's coverage of the file, checked to be the
/// ones the answer folded: the running crc over the old coverage and them is the answer's.
fn new_bytes(path: &Path, old: &Coverage, t: &Transcript) -> Result<Vec<u8>, String> {
    let end = t.coverage.end;
    if end < old.end {
        return Err(format!("{} is covered less than before", path.display()));
    }
    let len = usize::try_from(end - old.end).map_err(|_| "too many new bytes".to_owned())?;
    let mut bytes = vec![0u8; len];
    let file = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    std::os::unix::fs::FileExt::read_exact_at(&file, &mut bytes, old.end)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut crc = crc32fast::Hasher::new_with_initial(old.crc);
    crc.update(&bytes);
    if crc.finalize() != t.coverage.crc {
        return Err(format!("{} changed while it was read", path.display()));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests;
