//! What the index file says, grouped: every valid record, by source path and version, with the
//! damaged stretches and the torn end the scan found. Readers, the writer, `--list`,
//! `--verify` and restore all start from it.

use std::collections::BTreeMap;
use std::path::Path;

use super::error::ArchiveError;
use super::files::{INDEX_HEADER, Paths, read_if_exists};
use super::record::{Gap, Record, scan};

/// One version of a source: its records in source order.
#[derive(Clone, Debug)]
pub(crate) struct Version {
    /// The version number (from 1).
    pub(crate) number: u32,
    /// Indexes into [`Catalog::records`], by `start`.
    pub(crate) records: Vec<usize>,
}

/// The index file, read and grouped.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    /// Valid records, in file order.
    pub(crate) records: Vec<Record>,
    /// Each record's offset in the index file.
    pub(crate) offsets: Vec<u64>,
    /// Versions of each source path, by number.
    pub(crate) sources: BTreeMap<Vec<u8>, Vec<Version>>,
    /// Damaged stretches of the index file.
    pub(crate) damaged: Vec<Gap>,
    /// A torn end of the index file.
    pub(crate) torn: Option<Gap>,
}

impl Catalog {
    /// Reads the index file in `dir`; an archive that does not exist yet is empty.
    pub(crate) fn load(dir: &Path) -> Result<Catalog, ArchiveError> {
        let paths = Paths::new(dir);
        let Some(bytes) = read_if_exists(&paths.index)? else {
            return Ok(Catalog::default());
        };
        Catalog::from_index_bytes(&bytes).ok_or(ArchiveError::NotAnArchive { path: paths.index })
    }

    /// Groups an index file's bytes; `None` when they do not start with the index header (a
    /// prefix of it, as a cut-short creation leaves, is an empty index).
    pub(crate) fn from_index_bytes(bytes: &[u8]) -> Option<Catalog> {
        let n = bytes.len().min(INDEX_HEADER.len());
        if bytes.get(..n)? != INDEX_HEADER.get(..n)? {
            return None;
        }
        let body = bytes.get(INDEX_HEADER.len()..).unwrap_or_default();
        let scanned = scan(body, INDEX_HEADER.len() as u64);
        let mut catalog = Catalog {
            damaged: scanned.damaged,
            torn: scanned.torn,
            ..Catalog::default()
        };
        for (offset, record) in scanned.records {
            let versions = catalog.sources.entry(record.path.clone()).or_default();
            let i = catalog.records.len();
            match versions.iter_mut().find(|v| v.number == record.version) {
                Some(v) => v.records.push(i),
                None => versions.push(Version {
                    number: record.version,
                    records: vec![i],
                }),
            }
            catalog.records.push(record);
            catalog.offsets.push(offset);
        }
        for versions in catalog.sources.values_mut() {
            versions.sort_by_key(|v| v.number);
            for v in versions.iter_mut() {
                v.records
                    .sort_by_key(|&i| catalog.records.get(i).map(|r| r.start));
            }
        }
        Some(catalog)
    }

    /// A record by index.
    pub(crate) fn record(&self, i: usize) -> Option<&Record> {
        self.records.get(i)
    }

    /// The record that ends a version: the one reaching furthest.
    pub(crate) fn last_of(&self, version: &Version) -> Option<&Record> {
        version
            .records
            .iter()
            .filter_map(|&i| self.record(i))
            .max_by_key(|r| r.end)
    }

    /// The latest version of a source and its furthest record.
    pub(crate) fn latest(&self, path: &[u8]) -> Option<(&Version, &Record)> {
        let version = self.sources.get(path)?.last()?;
        Some((version, self.last_of(version)?))
    }

    /// Where the last frame a valid record names ends in the frames file.
    pub(crate) fn frames_end(&self) -> u64 {
        self.records
            .iter()
            .map(|r| r.frame_offset + r.frame_len)
            .max()
            .unwrap_or(0)
    }
}
