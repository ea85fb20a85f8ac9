//! The cache's own files (the usage snapshot and its keys, the `OpenCode` usage memo): a header
//! (magic, layout version, payload length and crc) and a payload (postcard, or bytes as they
//! are), read back only when whole, ours and of this layout, written under a temporary name
//! (mode 0600) then renamed.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::cache::{ensure_private_dir, open_private_file};

/// Magic, version, payload length, payload crc.
const HEADER: usize = 8 + 4 + 8 + 4;

/// What a file holds: its magic and the layout it is written in.
pub(crate) struct Kind {
    /// Names the file in errors ("the snapshot").
    pub(crate) name: &'static str,
    pub(crate) magic: &'static [u8; 8],
    /// Another layout is not read (the file is made again).
    pub(crate) version: u32,
}

impl Kind {
    /// The file's bytes for `value`.
    pub(crate) fn encode<T: Serialize>(&self, value: &T) -> Result<Vec<u8>, String> {
        let payload = postcard::to_stdvec(value).map_err(|e| e.to_string())?;
        Ok(self.encode_raw(&payload))
    }

    /// The file's bytes for a payload kept as it is.
    pub(crate) fn encode_raw(&self, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + payload.len());
        out.extend_from_slice(self.magic);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// The value in a file's bytes, checking its header and checksum.
    pub(crate) fn decode<T: DeserializeOwned>(&self, bytes: &[u8]) -> Result<T, String> {
        let payload = self.decode_raw(bytes)?;
        postcard::from_bytes(payload).map_err(|e| format!("{} is damaged: {e}", self.name))
    }

    /// The payload of a file's bytes, checking its header and checksum.
    pub(crate) fn decode_raw<'b>(&self, bytes: &'b [u8]) -> Result<&'b [u8], String> {
        let name = self.name;
        let damaged = |what: &str| Err(format!("{name} is damaged: {what}"));
        let (Some(magic), Some(version), Some(len), Some(crc), Some(payload)) = (
            bytes.get(0..8),
            bytes.get(8..12),
            bytes.get(12..20),
            bytes.get(20..24),
            bytes.get(HEADER..),
        ) else {
            return damaged("shorter than its header");
        };
        if magic != self.magic {
            return damaged("not one of ours");
        }
        let version = u32::from_le_bytes(version.try_into().unwrap_or_default());
        if version != self.version {
            return Err(format!("{name}'s layout {version} is not {}", self.version));
        }
        let len = u64::from_le_bytes(len.try_into().unwrap_or_default());
        if len != payload.len() as u64 {
            return damaged("its length");
        }
        if crc32fast::hash(payload) != u32::from_le_bytes(crc.try_into().unwrap_or_default()) {
            return damaged("its checksum");
        }
        Ok(payload)
    }

    /// The value in the file at `path`.
    pub(crate) fn read<T: DeserializeOwned>(&self, path: &Path) -> Result<T, String> {
        self.decode(&self.read_bytes(path)?)
    }

    /// The bytes of the file at `path` (checked by [`Kind::decode`] or [`Kind::decode_raw`]).
    pub(crate) fn read_bytes(&self, path: &Path) -> Result<Vec<u8>, String> {
        match std::fs::read(path) {
            Ok(bytes) => Ok(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(format!("no {} yet", self.name.trim_start_matches("the ")))
            }
            Err(e) => Err(format!("cannot read {}: {e}", self.name)),
        }
    }

    /// Writes `value` under a temporary name in `dir` (mode 0600), then renames it over
    /// `path`: a reader sees the old file or the new one, and a torn one fails its checksum.
    pub(crate) fn write<T: Serialize>(
        &self,
        dir: &Path,
        path: &Path,
        value: &T,
    ) -> std::io::Result<()> {
        let bytes = self.encode(value).map_err(std::io::Error::other)?;
        write_private(dir, path, &bytes)
    }

    /// Writes a payload kept as it is, as [`Kind::write`] writes a value.
    pub(crate) fn write_raw(&self, dir: &Path, path: &Path, payload: &[u8]) -> std::io::Result<()> {
        write_private(dir, path, &self.encode_raw(payload))
    }
}

/// Writes `bytes` under a temporary name in `dir` (mode 0600), then renames it over `path`.
fn write_private(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    ensure_private_dir(dir)?;
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".{}.tmp", std::process::id()));
    let temp = PathBuf::from(temp);
    let _ = std::fs::remove_file(&temp);
    let written = (|| {
        let mut file = open_private_file(&temp)?;
        file.set_len(0)?;
        file.write_all(bytes)?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}
