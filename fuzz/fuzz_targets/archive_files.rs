//! Arbitrary bytes as an archive's `index` and `frames` files (a user hands us their data
//! directory), or patches to a real archive of three small transcripts.
//!
//! Input: the first byte picks a mode (mod 2); the rest is
//! * mode 0: a 16-bit little-endian length, then that many bytes of `index`, the rest `frames`;
//! * mode 1: 4-byte patches applied to the real archive's two files, one after the other (a
//!   24-bit little-endian offset modulo their joint size and a byte to XOR in; a 0 byte
//!   truncates that file there).
//!
//! Checks: opening, `--list`, `--verify` and reading every version never panic; in mode 1 a
//! version read with no damage reported is exactly the transcript's bytes as archived.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agentlog::archive::{Archive, ArchiveOptions, archive, verify};
use libfuzzer_sys::fuzz_target;

struct Fixture {
    _dir: tempfile::TempDir,
    sources: Vec<(PathBuf, Vec<u8>)>,
    index: Vec<u8>,
    frames: Vec<u8>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let src = std::fs::canonicalize(dir.path()).unwrap().join("proj");
        std::fs::create_dir_all(&src).unwrap();
        let mut sources = Vec::new();
        for (name, n) in [("a", 3), ("b", 1), ("c", 5)] {
            let mut text = String::new();
            for i in 0..n {
                text.push_str(r#"{"type":"user","sessionId":""#);
                text.push_str(name);
                text.push_str(r#"","uuid":"u"#);
                text.push_str(&i.to_string());
                text.push_str("\",\"parentUuid\":null}\n");
            }
            let path = src.join(format!("{name}.jsonl"));
            std::fs::write(&path, &text).unwrap();
            sources.push((path, text.into_bytes()));
        }
        let archive_dir = dir.path().join("archive");
        let options = ArchiveOptions {
            dir: Some(archive_dir.clone()),
            ..ArchiveOptions::default()
        };
        archive(&[src], &options, &|_, _| {}).unwrap();
        Fixture {
            index: std::fs::read(archive_dir.join("index")).unwrap(),
            frames: std::fs::read(archive_dir.join("frames")).unwrap(),
            sources,
            _dir: dir,
        }
    })
}

fn patched(data: &[u8], fixture: &Fixture) -> (Vec<u8>, Vec<u8>) {
    let mut index = fixture.index.clone();
    let mut frames = fixture.frames.clone();
    for patch in data.chunks_exact(4) {
        let total = index.len() + frames.len();
        if total == 0 {
            break;
        }
        let at = (usize::from(patch[0]) | usize::from(patch[1]) << 8 | usize::from(patch[2]) << 16)
            % total;
        let (file, at) = if at < index.len() {
            (&mut index, at)
        } else {
            (&mut frames, at - index.len())
        };
        if patch[3] == 0 {
            file.truncate(at);
        } else {
            file[at] ^= patch[3];
        }
    }
    (index, frames)
}

fn check(dir: &Path, oracle: Option<&[(PathBuf, Vec<u8>)]>) {
    let _ = verify(dir);
    let Ok(archive) = Archive::open(dir) else {
        return;
    };
    let _ = archive.list();
    for path in archive.paths() {
        for version in archive.versions(&path) {
            let Ok(read) = archive.read(&path, Some(version)) else {
                continue;
            };
            let want = oracle.and_then(|o| o.iter().find(|(p, _)| *p == path));
            if let (true, Some((_, bytes))) = (read.damage.is_empty(), want) {
                assert_eq!(
                    &read.bytes,
                    bytes,
                    "{} version {version} read wrong bytes",
                    path.display()
                );
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture();
    let (index, frames, oracle) = if mode % 2 == 0 {
        let n = rest
            .get(..2)
            .map_or(0, |b| usize::from(u16::from_le_bytes([b[0], b[1]])));
        let body = rest.get(2..).unwrap_or_default();
        let (i, f) = body.split_at(n.min(body.len()));
        (i.to_vec(), f.to_vec(), None)
    } else {
        let (i, f) = patched(rest, fixture);
        (i, f, Some(fixture.sources.as_slice()))
    };
    std::fs::write(dir.path().join("index"), index).unwrap();
    std::fs::write(dir.path().join("frames"), frames).unwrap();
    check(dir.path(), oracle);
});
