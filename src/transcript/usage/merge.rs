//! Reading many transcripts and counting a message in several files once: every file read
//! through its own index (in a few threads), the Claude Code messages and pi entries that
//! files share merged as docs/TRANSCRIPTS.md, "Usage over many transcripts", says.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use foldhash::fast::RandomState as Fast;

use super::{Skipped, UsageOptions, UsageReport};
use crate::transcript::claude::{merge_message, tally_of};
use crate::transcript::error::TranscriptError;
use crate::transcript::fold::{BucketKey, Entry, Message, keys_messages};
use crate::transcript::format::Format;
use crate::transcript::store::{OpenOptions, Transcript, open};
use crate::transcript::tally::Tally;

/// A map of ids built and dropped within one answer: hashed fast, not with std's `SipHash`.
pub(crate) type FastMap<K, V> = HashMap<K, V, Fast>;

/// Reads every file (in `threads` threads, 0 for one a core), each through its index with
/// `open_options`; `progress` is called with the number of files done after each one.
fn read_all(
    files: &[PathBuf],
    open_options: &OpenOptions,
    threads: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Vec<Result<Transcript, TranscriptError>> {
    let threads = match threads {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        n => n,
    }
    .clamp(1, files.len().max(1));
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Transcript, TranscriptError>>>> =
        Mutex::new((0..files.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = files.get(i) else { break };
                    let read = open(path, open_options);
                    if let Ok(mut slots) = results.lock()
                        && let Some(slot) = slots.get_mut(i)
                    {
                        *slot = Some(read);
                    }
                    progress(done.fetch_add(1, Ordering::Relaxed) + 1, files.len());
                }
            });
        }
    });
    let slots = results
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    slots
        .into_iter()
        .zip(files)
        .map(|(slot, path)| {
            slot.unwrap_or_else(|| {
                Err(TranscriptError::io(
                    "read",
                    path,
                    std::io::Error::other("the reading thread stopped"),
                ))
            })
        })
        .collect()
}

/// Every file read and merged: the report without its rows, the transcripts read, and each
/// one's buckets after the merge (and before it, when asked).
pub(crate) struct Merged {
    pub(crate) report: UsageReport,
    pub(crate) read: Vec<Transcript>,
    /// Each file's own buckets, before the merge (empty unless asked for).
    pub(crate) own: Vec<HashMap<BucketKey, Tally>>,
    pub(crate) buckets: Vec<HashMap<BucketKey, Tally>>,
}

/// Reads every file through its index and merges the messages files share.
pub(crate) fn read_and_merge(
    files: &[PathBuf],
    options: &UsageOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
    keep_own: bool,
) -> Merged {
    let mut report = UsageReport::default();
    let mut read = Vec::new();
    let first = OpenOptions {
        load_ids: true,
        ..options.open.clone()
    };
    for (path, result) in files
        .iter()
        .zip(read_all(files, &first, options.threads, progress))
    {
        match result {
            Ok(t) => {
                *report.files.entry(t.format.name()).or_default() += 1;
                *report
                    .index_outcomes
                    .entry(t.outcome.code().to_owned())
                    .or_default() += 1;
                read.push(t);
            }
            Err(error) => report.skipped.push(Skipped {
                path: path.clone(),
                error,
            }),
        }
    }
    // Each file's buckets already count each of its messages once; only the ids found in
    // more than one file are merged, and their tallies moved to the file that owns them. The
    // first pass read ids alone: the files that share one are read again with their messages.
    let again = OpenOptions {
        load_dedup: true,
        ..options.open.clone()
    };
    // A file folded whole in this run has its messages already (every file, on a first run).
    let (sharing, paths): (Vec<usize>, Vec<PathBuf>) = sharing_files(&read)
        .into_iter()
        .filter_map(|i| read.get(i).map(|t| (i, t)))
        .filter(|(_, t)| t.dedup.as_ref().is_some_and(|d| d.ids_only))
        .map(|(i, t)| (i, t.path.clone()))
        .unzip();
    let fuller = read_all(&paths, &again, options.threads, &|_, _| {});
    for (i, full) in sharing.into_iter().zip(fuller) {
        if let Some(slot) = read.get_mut(i)
            && let Ok(full) = full
        {
            *slot = full;
        }
    }
    let mut buckets: Vec<HashMap<BucketKey, Tally>> = read
        .iter_mut()
        .map(|t| {
            t.dedup
                .as_mut()
                .map(|d| std::mem::take(&mut d.buckets))
                .unwrap_or_default()
        })
        .collect();
    let own = if keep_own {
        buckets.clone()
    } else {
        Vec::new()
    };
    report.cross_file_duplicates = merge_shared(&read, &mut buckets);
    Merged {
        report,
        read,
        own,
        buckets,
    }
}

/// The Claude Code message ids of each file, by file number.
fn ids_of(read: &[Transcript], i: usize) -> Option<&HashMap<String, Vec<Message>>> {
    read.get(i)
        .filter(|t| keys_messages(t.format))
        .and_then(|t| t.dedup.as_ref())
        .map(|d| &d.messages)
}

/// The pi entries of each file, by file number.
fn entries_of(read: &[Transcript], i: usize) -> Option<&HashMap<String, Entry>> {
    read.get(i)
        .filter(|t| t.format == Format::Pi)
        .and_then(|t| t.dedup.as_ref())
        .map(|d| &d.entries)
}

/// The numbers of the files holding a Claude Code message id another file holds too (only
/// these are read again, for their messages: pi entries are loaded whole the first time).
fn sharing_files(read: &[Transcript]) -> Vec<usize> {
    let total: usize = (0..read.len())
        .filter_map(|i| ids_of(read, i))
        .map(HashMap::len)
        .sum();
    let mut first: FastMap<&str, usize> = FastMap::with_capacity_and_hasher(total, Fast::default());
    let mut sharing = vec![false; read.len()];
    for i in 0..read.len() {
        for id in ids_of(read, i).into_iter().flat_map(HashMap::keys) {
            let owner = *first.entry(id.as_str()).or_insert(i);
            if owner != i {
                for j in [owner, i] {
                    if let Some(flag) = sharing.get_mut(j) {
                        *flag = true;
                    }
                }
            }
        }
    }
    (0..read.len())
        .filter(|&i| sharing.get(i) == Some(&true))
        .collect()
}

/// Merges the Claude Code messages whose id is in more than one file: each file's own
/// messages under the id are taken out of its buckets, and the merged messages are put in
/// the buckets of the file that holds them first (their bucket is that file's). Then the pi
/// entries ([`merge_entries`]). Returns how many messages of later files were merged into
/// earlier ones.
fn merge_shared(read: &[Transcript], buckets: &mut [HashMap<BucketKey, Tally>]) -> u64 {
    let messages = |i: usize| ids_of(read, i);
    let total: usize = (0..read.len()).filter_map(messages).map(HashMap::len).sum();
    let mut first: FastMap<&str, usize> = FastMap::with_capacity_and_hasher(total, Fast::default());
    let mut shared: FastMap<&str, Vec<usize>> = FastMap::default();
    for i in 0..read.len() {
        for id in messages(i).into_iter().flat_map(HashMap::keys) {
            match first.entry(id.as_str()) {
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(i);
                }
                std::collections::hash_map::Entry::Occupied(o) => {
                    let owner = *o.get();
                    shared
                        .entry(id.as_str())
                        .or_insert_with(|| vec![owner])
                        .push(i);
                }
            }
        }
    }
    let mut duplicates = 0;
    for (id, holders) in shared {
        let mut merged: Vec<Message> = Vec::new();
        let mut owners: Vec<usize> = Vec::new();
        for &i in &holders {
            let Some(list) = messages(i).and_then(|m| m.get(id)) else {
                continue;
            };
            for m in list {
                if let Some(b) = buckets.get_mut(i).and_then(|b| b.get_mut(&m.bucket)) {
                    b.sub(&tally_of(&m.usage));
                }
                let before = merged.len();
                merge_message(&mut merged, m);
                if merged.len() > before {
                    owners.push(i);
                } else if owners.iter().any(|&o| o != i) {
                    duplicates += 1;
                }
            }
        }
        for (m, owner) in merged.iter().zip(owners) {
            if let Some(file) = buckets.get_mut(owner) {
                file.entry(m.bucket).or_default().add(&tally_of(&m.usage));
            }
        }
    }
    duplicates + merge_entries(read, buckets)
}

/// Counts each pi entry once across files. pi's entry ids are 8 hex digits, unique within a
/// session file but not across files, so a later file's entry is a copy of an earlier file's
/// (a resumed or copied session) when both have the same id, the same usage and the same
/// quarter-hour and model name: it is taken out of the later file's bucket. Compaction entries
/// count nothing and are left alone. Returns how many copies were taken out.
fn merge_entries(read: &[Transcript], buckets: &mut [HashMap<BucketKey, Tally>]) -> u64 {
    type Same<'a> = (&'a str, i64, Option<&'a str>, Tally);
    let total: usize = (0..read.len())
        .filter_map(|i| entries_of(read, i))
        .map(HashMap::len)
        .sum();
    let mut first: FastMap<Same<'_>, usize> =
        FastMap::with_capacity_and_hasher(total, Fast::default());
    let mut copies = 0;
    for (i, t) in read.iter().enumerate() {
        for (id, entry) in entries_of(read, i).into_iter().flatten() {
            let Entry::Message { tally, bucket } = entry else {
                continue;
            };
            let model = t.summary.models.get(bucket.1 as usize).map(String::as_str);
            let same = (id.as_str(), bucket.0, model, *tally);
            if *first.entry(same).or_insert(i) == i {
                continue;
            }
            if let Some(b) = buckets.get_mut(i).and_then(|b| b.get_mut(bucket)) {
                b.sub(tally);
                copies += 1;
            }
        }
    }
    copies
}
