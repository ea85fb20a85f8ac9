// Test files are small, so offsets and lengths fit every integer type used here.
#![allow(clippy::cast_possible_truncation)]

use std::io::Write;
use std::os::unix::fs::FileExt;

use proptest::prelude::*;

use super::*;

fn file_with(bytes: &[u8]) -> File {
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(bytes).unwrap();
    f
}

/// The coverage a fresh scan of the whole file gives.
fn scanned(file: &File, max_line: usize) -> Coverage {
    let mut builder = CoverageBuilder::new();
    let len = file.metadata().unwrap().len();
    scan_lines::<io::Error>(file, &mut builder, len, max_line, |_| Ok(())).unwrap();
    builder.coverage()
}

/// The coverage computed directly from the bytes, the way the core index does.
fn direct(file: &File, bytes: &[u8], end: u64) -> Coverage {
    Coverage {
        end,
        head: WindowSum::head(file, end).unwrap().unwrap(),
        tail: WindowSum::tail(file, end).unwrap().unwrap(),
        crc: crc32fast::hash(&bytes[..end as usize]),
    }
}

/// Lines of pseudo-random bytes (never `\n`), lengths as given.
fn log_bytes(seed: u64, lengths: &[usize]) -> Vec<u8> {
    let mut state = seed | 1;
    let mut out = Vec::new();
    for &len in lengths {
        for _ in 0..len {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            out.push(b'a' + (state % 26) as u8);
        }
        out.push(b'\n');
    }
    out
}

#[test]
fn empty_coverage_is_well_formed_and_current_on_an_empty_file() {
    let cov = Coverage::empty();
    assert!(cov.is_well_formed());
    assert_eq!(CoverageBuilder::new().coverage(), cov);
    let f = file_with(b"");
    assert_eq!(cov.check(&f).unwrap(), CoverageCheck::Current { len: 0 });
    let f = file_with(b"torn");
    assert_eq!(cov.check(&f).unwrap(), CoverageCheck::Grew { len: 4 });
    assert_eq!(cov.check_deep(&f).unwrap(), CoverageCheck::Grew { len: 4 });
}

#[test]
fn builder_agrees_with_windows_read_from_the_file() {
    for lengths in [
        vec![3, 0, 10],
        vec![70_000],
        vec![40_000, 40_000, 5],
        vec![200_000, 1, 2, 3],
    ] {
        let bytes = log_bytes(7, &lengths);
        let f = file_with(&bytes);
        let cov = scanned(&f, DEFAULT_MAX_LINE_FOR_TESTS);
        assert_eq!(cov, direct(&f, &bytes, bytes.len() as u64), "{lengths:?}");
        assert!(cov.is_well_formed());
        assert_eq!(
            cov.check(&f).unwrap(),
            CoverageCheck::Current {
                len: bytes.len() as u64
            }
        );
    }
}

const DEFAULT_MAX_LINE_FOR_TESTS: usize = 1 << 20;

#[test]
fn measure_agrees_with_the_builder_and_checks_tell_changes_apart() {
    let bytes = log_bytes(3, &[5, 80_000, 7]);
    let mut f = file_with(&bytes);
    let len = bytes.len() as u64;
    let measured = Coverage::measure(&f, len, crc32fast::hash(&bytes))
        .unwrap()
        .unwrap();
    assert_eq!(measured, scanned(&f, DEFAULT_MAX_LINE_FOR_TESTS));
    assert_eq!(Coverage::measure(&f, len + 1, 0).unwrap(), None);
    f.write_all(b"more\n").unwrap();
    assert_eq!(
        measured.check(&f).unwrap(),
        CoverageCheck::Grew { len: len + 5 }
    );
    f.write_all_at(b"#", 0).unwrap();
    assert_eq!(
        measured.check(&f).unwrap(),
        CoverageCheck::HeadChanged { len: len + 5 }
    );
    f.write_all_at(&bytes[..1], 0).unwrap();
    f.write_all_at(b"#", len - 2).unwrap();
    assert_eq!(
        measured.check(&f).unwrap(),
        CoverageCheck::TailChanged { len: len + 5 }
    );
    f.set_len(len - 1).unwrap();
    assert_eq!(
        measured.check(&f).unwrap(),
        CoverageCheck::Truncated { len: len - 1 }
    );
}

#[test]
fn push_refuses_bytes_that_do_not_end_a_line() {
    let mut builder = CoverageBuilder::new();
    assert_eq!(builder.push(b"abc"), Err(NotLineEnd));
    assert_eq!(builder.end(), 0);
    builder.push(b"").unwrap();
    builder.push(b"a\nb\n").unwrap();
    assert_eq!(builder.end(), 4);
    assert_eq!(builder.coverage().crc, crc32fast::hash(b"a\nb\n"));
}

#[test]
fn a_torn_tail_is_not_covered_and_too_long_lines_are() {
    let mut bytes = log_bytes(3, &[10, 5000, 20]);
    bytes.extend_from_slice(b"torn tail");
    let f = file_with(&bytes);
    // A 100-byte line limit makes the middle line too long: it is hashed from the file.
    let mut seen = Vec::new();
    let mut builder = CoverageBuilder::new();
    scan_lines::<io::Error>(&f, &mut builder, bytes.len() as u64, 100, |line| {
        seen.push(matches!(line, Line::Complete { .. }));
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, vec![true, false, true]);
    let end = bytes.len() as u64 - 9;
    assert_eq!(builder.coverage(), direct(&f, &bytes, end));
    assert_eq!(
        builder.coverage().check(&f).unwrap(),
        CoverageCheck::Grew {
            len: bytes.len() as u64
        }
    );
}

#[test]
fn resume_refuses_a_file_whose_tail_changed() {
    let bytes = log_bytes(5, &[100, 100]);
    let f = file_with(&bytes);
    let cov = scanned(&f, DEFAULT_MAX_LINE_FOR_TESTS);
    assert!(CoverageBuilder::resume(&cov, &f).unwrap().is_some());
    f.write_at(b"Z", 150).unwrap();
    assert!(CoverageBuilder::resume(&cov, &f).unwrap().is_none());
    let mut bad = cov;
    bad.tail.len += 1;
    assert!(!bad.is_well_formed());
    assert!(CoverageBuilder::resume(&bad, &f).unwrap().is_none());
}

/// A change made to a covered log.
#[derive(Debug, Clone)]
enum Change {
    /// Append these line lengths (and maybe a torn tail of this many bytes).
    Append(Vec<usize>, usize),
    /// Truncate to this fraction (per mille) of the covered bytes.
    Truncate(u16),
    /// XOR one byte at this fraction (per mille) of the covered bytes.
    Rewrite(u16, u8),
    /// Truncate to a fraction, then write this many new bytes (lines) after it.
    Regrow(u16, Vec<usize>),
}

fn change() -> impl Strategy<Value = Change> {
    let lengths = prop::collection::vec(
        prop_oneof![4 => 0usize..300, 1 => 60_000usize..80_000],
        0..6,
    );
    prop_oneof![
        (lengths.clone(), 0usize..50).prop_map(|(l, t)| Change::Append(l, t)),
        (0u16..1000).prop_map(Change::Truncate),
        (0u16..1000, 1u8..=255).prop_map(|(at, x)| Change::Rewrite(at, x)),
        (0u16..1000, lengths).prop_map(|(at, l)| Change::Regrow(at, l)),
    ]
}

fn at_fraction(end: usize, per_mille: u16) -> usize {
    end * usize::from(per_mille) / 1000
}

fn apply(original: &[u8], end: usize, change: &Change, seed: u64) -> Vec<u8> {
    let mut bytes = original.to_vec();
    match change {
        Change::Append(lengths, torn) => {
            bytes.extend(log_bytes(seed ^ 0x55, lengths));
            bytes.extend(vec![b'x'; *torn]);
        }
        Change::Truncate(at) => bytes.truncate(at_fraction(end, *at)),
        Change::Rewrite(at, x) => {
            if end > 0 {
                let at = at_fraction(end, *at).min(end - 1);
                bytes[at] ^= x;
            }
        }
        Change::Regrow(at, lengths) => {
            bytes.truncate(at_fraction(end, *at));
            bytes.extend(log_bytes(seed ^ 0xAA, lengths));
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Whatever happens to a covered log, the checks say exactly what happened: intact when the
    /// covered bytes are unchanged; not intact (deep) when any covered byte changed; not intact
    /// (shallow) when a changed byte lies in a window; truncated when shorter.
    #[test]
    fn every_change_to_covered_bytes_is_classified(
        seed in any::<u64>(),
        lengths in prop::collection::vec(prop_oneof![6 => 0usize..400, 1 => 50_000usize..90_000], 0..8),
        change in change(),
    ) {
        let original = log_bytes(seed, &lengths);
        let end = original.len();
        let f = file_with(&original);
        let cov = scanned(&f, DEFAULT_MAX_LINE_FOR_TESTS);
        prop_assert_eq!(cov, direct(&f, &original, end as u64));

        let changed = apply(&original, end, &change, seed);
        let f = file_with(&changed);
        let len = changed.len() as u64;
        let shallow = cov.check(&f).unwrap();
        let deep = cov.check_deep(&f).unwrap();
        prop_assert_eq!(shallow.log_len(), len);
        if changed.len() < end {
            prop_assert_eq!(shallow, CoverageCheck::Truncated { len });
            prop_assert_eq!(deep, CoverageCheck::Truncated { len });
            return Ok(());
        }
        let expected_intact = if len > end as u64 {
            CoverageCheck::Grew { len }
        } else {
            CoverageCheck::Current { len }
        };
        if changed[..end] == original[..end] {
            prop_assert_eq!(shallow, expected_intact);
            prop_assert_eq!(deep, expected_intact);
            // Catching up gives exactly what one scan of the whole file gives.
            let mut builder = CoverageBuilder::resume(&cov, &f).unwrap().unwrap();
            scan_lines::<io::Error>(&f, &mut builder, len, DEFAULT_MAX_LINE_FOR_TESTS, |_| Ok(())).unwrap();
            prop_assert_eq!(builder.coverage(), scanned(&f, DEFAULT_MAX_LINE_FOR_TESTS));
        } else {
            prop_assert!(!deep.is_intact(), "deep check missed a change: {:?}", deep);
            let window = (end as u64).min(WINDOW_BYTES) as usize;
            let in_head = changed[..window] != original[..window];
            let in_tail = changed[end - window..end] != original[end - window..end];
            if in_head {
                prop_assert_eq!(shallow, CoverageCheck::HeadChanged { len });
            } else if in_tail {
                prop_assert_eq!(shallow, CoverageCheck::TailChanged { len });
            } else {
                prop_assert_eq!(shallow, expected_intact);
                prop_assert_eq!(deep, CoverageCheck::BodyChanged { len });
            }
            prop_assert!(CoverageBuilder::resume(&cov, &f).unwrap().is_none() || !in_tail);
        }
    }

    /// Appending in random pieces (torn tails included) and catching up after each gives the
    /// coverage of one scan of the whole file.
    #[test]
    fn catching_up_in_pieces_equals_one_scan(
        seed in any::<u64>(),
        lengths in prop::collection::vec(prop_oneof![6 => 0usize..400, 1 => 50_000usize..90_000], 1..8),
        cuts in prop::collection::vec(0u16..1000, 1..6),
    ) {
        let whole = log_bytes(seed, &lengths);
        let mut cuts: Vec<usize> = cuts.iter().map(|&c| at_fraction(whole.len(), c)).collect();
        cuts.push(whole.len());
        cuts.sort_unstable();
        let mut f = tempfile::tempfile().unwrap();
        let mut cov = Coverage::empty();
        let mut written = 0;
        for cut in cuts {
            f.write_all(&whole[written..cut]).unwrap();
            written = cut;
            prop_assert!(cov.check(&f).unwrap().is_intact());
            let mut builder = CoverageBuilder::resume(&cov, &f).unwrap().unwrap();
            scan_lines::<io::Error>(&f, &mut builder, cut as u64, 100_000, |_| Ok(())).unwrap();
            cov = builder.coverage();
            prop_assert_eq!(cov, scanned(&f, 100_000));
        }
        prop_assert_eq!(cov.check(&f).unwrap(), CoverageCheck::Current { len: whole.len() as u64 });
    }
}
