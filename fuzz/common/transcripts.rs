//! Helpers for the transcript fuzz targets: a scratch directory, a panic filter for redb's
//! caught panics, and the checks every reader target makes.
#![allow(dead_code)]

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agentlog::transcript::{Format, fold_at_once, fold_in_pieces};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::oracle;

/// This fuzz process's scratch directory, in /dev/shm when there is one (redb's and the
/// marker's syncs then cost nothing). Directories of fuzz processes that no longer run are
/// removed first.
pub fn workdir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let parent = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        if let Ok(entries) = std::fs::read_dir(&parent) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(pid) = name
                    .to_str()
                    .and_then(|n| n.strip_prefix("agentlog-tfuzz-"))
                else {
                    continue;
                };
                if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let dir = parent.join(format!("agentlog-tfuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("cannot create the fuzz scratch directory");
        dir
    })
}

/// libfuzzer-sys aborts on any panic, even a caught one; agentlog catches redb's panics on
/// damaged files on purpose, so those are let through (and the first few printed).
pub fn install_panic_filter() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let previous = std::panic::take_hook();
        let seen = std::sync::atomic::AtomicU64::new(0);
        std::panic::set_hook(Box::new(move |info| {
            let in_redb = info
                .location()
                .is_some_and(|l| l.file().contains("/redb-") || l.file().starts_with("redb"));
            if in_redb {
                let verbose = std::env::var_os("AGENTLOG_FUZZ_VERBOSE").is_some();
                if seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < 3 || verbose {
                    eprintln!("[agentlog-fuzz] redb panicked (expected to be caught): {info}");
                }
                if verbose {
                    eprintln!("{}", std::backtrace::Backtrace::force_capture());
                }
                return;
            }
            previous(info);
        }));
    });
}

/// Whether any object in the JSON text repeats a key (where `serde_json`'s `Value` keeps the
/// last and a struct refuses the line, so the oracle and the readers may differ by design).
pub fn repeats_a_key(line: &[u8]) -> bool {
    struct Dup;
    impl<'de> Visitor<'de> for Dup {
        type Value = bool;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("JSON")
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
            let mut dup = false;
            while let Some(d) = seq.next_element_seed(DupSeed)? {
                dup |= d;
            }
            Ok(dup)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
            let mut keys = HashSet::new();
            let mut dup = false;
            while let Some(key) = map.next_key::<String>()? {
                dup |= !keys.insert(key);
                dup |= map.next_value_seed(DupSeed)?;
            }
            Ok(dup)
        }
    }
    struct DupSeed;
    impl<'de> de::DeserializeSeed<'de> for DupSeed {
        type Value = bool;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
            d.deserialize_any(Dup)
        }
    }
    let _ = IgnoredAny;
    let mut de = serde_json::Deserializer::from_slice(line);
    de.deserialize_any(Dup).unwrap_or(false)
}

/// The input with every line the oracle and the readers may read differently by design
/// blanked (same length, so offsets stay): lines that are not JSON objects to `serde_json`,
/// that repeat a key, or that hold a backslash (escapes can spell keys the prefilter does not
/// look for).
pub fn normalized(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    for line in data.split_inclusive(|&b| b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let plain = !body.contains(&b'\\')
            && serde_json::from_slice::<serde_json::Value>(body).is_ok_and(|v| v.is_object())
            && !repeats_a_key(body);
        if plain {
            out.extend_from_slice(body);
        } else {
            out.extend(std::iter::repeat_n(b'x', body.len()));
        }
        if line.ends_with(b"\n") {
            out.push(b'\n');
        }
    }
    out
}

/// A tally's usage adds up (`total` is the sum of the four fields, exactly, below saturation)
/// and its parts stay within their wholes.
fn assert_adds_up(t: &agentlog::transcript::Tally) {
    for u in [&t.usage, &t.long_prompt] {
        let exact = [u.input, u.output, u.cache_creation, u.cache_read]
            .iter()
            .map(|&n| u128::from(n))
            .sum::<u128>();
        assert_eq!(u128::from(u.total()), exact.min(u128::from(u64::MAX)));
        assert!(u.reasoning <= u.output && u.cache_creation_1h <= u.cache_creation);
    }
}

/// The checks of a reader target. Input: the first byte is a count of cuts (mod 9), then two
/// bytes per cut; the rest is the transcript.
pub fn check_reader(format: Format, data: &[u8]) {
    let (cuts, transcript) = match data.split_first() {
        Some((&n, rest)) => {
            let n = usize::from(n % 9).min(rest.len() / 2);
            let (cuts, transcript) = rest.split_at(n * 2);
            let len = transcript.len().max(1);
            let cuts: Vec<usize> = cuts
                .chunks(2)
                .map(|c| usize::from(u16::from_le_bytes([c[0], c[1]])) % (len + 1))
                .collect();
            (cuts, transcript)
        }
        None => (Vec::new(), data),
    };
    // The fold across catch-ups (state encoded and recalled) equals one fold.
    let once = fold_at_once(format, transcript);
    let pieces = fold_in_pieces(format, transcript, &cuts).expect("an in-memory fold cannot fail");
    assert_eq!(pieces, once, "pieces at {cuts:?}");
    // The summary holds together.
    let s = &once.summary;
    assert_eq!(s.generations.len(), s.boundaries.len() + 1);
    let mut sum = agentlog::transcript::Tally::default();
    for g in &s.generations {
        sum.add(g);
        assert_adds_up(g);
    }
    assert_eq!(sum, s.lifetime);
    assert_adds_up(&s.lifetime);
    for (_, bucket) in &once.buckets {
        assert_adds_up(bucket);
    }
    let mut line_starts = vec![0u64];
    for (i, &b) in transcript.iter().enumerate() {
        if b == b'\n' {
            line_starts.push(i as u64 + 1);
        }
    }
    for b in &s.boundaries {
        assert_eq!(
            line_starts.get(usize::try_from(b.line).unwrap() - 1),
            Some(&b.offset),
            "{b:?}"
        );
    }
    // Where both read the same lines, the rules give the oracle's answer.
    let plain = normalized(transcript);
    let fold = agentlog::transcript::fold_bytes(format, &plain);
    let observed = oracle::observed(fold.summary(), fold.buckets().map(|(k, t)| (k, *t)));
    assert_eq!(
        observed,
        oracle::expected(format, &plain),
        "against the oracle"
    );
}
