use super::file::{decode, decode_keys, encode, encode_keys_file};
use super::*;
use crate::transcript::tokens::Usage;

/// One message of `input` and `output` tokens, with a recorded cost.
fn tally(input: u64, output: u64) -> Tally {
    let usage = Usage {
        input,
        output,
        ..Usage::default()
    };
    Tally::message(usage, crate::transcript::tally::Money::from_picodollars(7))
}

fn sample() -> Snapshot {
    Snapshot {
        request: b"r".to_vec(),
        files: vec![FileEntry {
            path: b"/a.jsonl".to_vec(),
            format: Format::ClaudeCode,
            coverage: Coverage::empty(),
            stat: None,
            own: vec![((20_000, 0), tally(1, 2))],
            correction: vec![(
                (20_000, 0),
                Delta(tally(1, 2).counts().map(|c| -c.cast_signed())),
            )],
            spans: vec![(
                20_000,
                Span {
                    first: 20_000 * 900_000 + 1,
                    last: 20_000 * 900_000 + 7,
                },
            )],
        }],
        skipped: vec![b"/b.jsonl".to_vec()],
        models: vec!["m".to_owned()],
        duplicates: 1,
        keys: KeysSeal::default(),
    }
}

#[test]
fn a_snapshot_round_trips_and_any_damage_is_refused() {
    let s = sample();
    let bytes = encode(&s).unwrap();
    assert_eq!(decode(&bytes).unwrap(), s);
    for i in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[i] ^= 0x40;
        assert!(decode(&bad).is_err(), "flipped byte {i} was believed");
    }
    for len in 0..bytes.len() {
        assert!(decode(&bytes[..len]).is_err(), "cut at {len} was believed");
    }
}

#[test]
fn keys_round_trip_and_damaged_foreign_or_loose_keys_are_refused() {
    let keys = [(1, 0), (2, SEVERAL), (u64::MAX, 1)];
    let (bytes, seal) = encode_keys_file(&keys);
    assert_eq!(decode_keys(&bytes, seal, 2).unwrap(), keys);
    for i in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[i] ^= 0x40;
        assert!(
            decode_keys(&bad, seal, 2).is_err(),
            "flipped byte {i} was believed"
        );
    }
    for len in 0..bytes.len() {
        assert!(
            decode_keys(&bytes[..len], seal, 2).is_err(),
            "cut at {len} was believed"
        );
    }
    // Another snapshot's keys, though whole.
    let (other, other_seal) = encode_keys_file(&keys[..2]);
    assert!(decode_keys(&other, seal, 2).is_err());
    assert!(decode_keys(&bytes, other_seal, 2).is_err());
    // Out of order, or filed under a file the snapshot does not have.
    for loose in [vec![(2, 0), (1, 0)], vec![(1, 0), (1, 0)], vec![(1, 5)]] {
        let (bytes, seal) = encode_keys_file(&loose);
        assert!(decode_keys(&bytes, seal, 2).is_err(), "{loose:?}");
    }
}

#[test]
fn a_snapshot_that_does_not_hold_together_is_refused() {
    let mut s = sample();
    s.skipped = vec![b"/a.jsonl".to_vec()];
    assert!(decode(&encode(&s).unwrap()).is_err());
    let mut s = sample();
    s.files[0].own[0].0.1 = 7;
    assert!(decode(&encode(&s).unwrap()).is_err());
}

#[test]
fn a_correction_puts_back_what_the_merge_made() {
    let mut models = Models::default();
    let t = |n: u64| tally(n, 0);
    let own: BTreeMap<QuarterKey, Tally> = [((1, 0), t(5)), ((2, 0), t(3))].into();
    let after: BTreeMap<QuarterKey, Tally> = [((1, 0), t(9)), ((3, 0), t(4))].into();
    let delta = correction(&own, &after);
    for (key, want) in [((1, 0), t(9)), ((2, 0), Tally::default()), ((3, 0), t(4))] {
        let d = delta.iter().find(|(k, _)| *k == key).map(|(_, d)| *d);
        let base = own.get(&key).copied().unwrap_or_default();
        assert_eq!(
            corrected(&base, &d.unwrap_or_default()),
            Some(want),
            "{key:?}"
        );
    }
    assert_eq!(models.number("x"), 0);
    assert_eq!(models.number("y"), 1);
    assert_eq!(models.number("x"), 0);
}
