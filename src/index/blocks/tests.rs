// Ordinals and seqs here are small, so their casts are exact.
#![allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]

use super::codec::{encode, encode_into};
use super::*;
use crate::event::{Timestamp, Totals};
use crate::index::schema::{self, BLOCK_EVENTS, Block, EventRow, flags};

fn entry(ordinal: u64, offset: u64, seq: u64, flags: u8) -> Entry {
    Entry {
        ordinal,
        offset,
        row: EventRow {
            len: 9,
            seq,
            time: Timestamp::from_micros(1_786_000_000_000_000 + ordinal as i64 * 7),
            type_id: (ordinal % 3) as u32,
            generation: 0,
            flags,
        },
        tokens: if flags & flags::TOKEN != 0 {
            [ordinal, 1, 2, 3]
        } else {
            [0; 4]
        },
    }
}

#[test]
fn a_block_decodes_to_what_was_encoded() {
    let mut entries = Vec::new();
    let mut offset = 40;
    for i in 0..BLOCK_EVENTS {
        let flags = match i % 5 {
            0 => flags::TOKEN,
            1 => flags::BOUNDARY | flags::EXPLICIT_SEQ,
            _ => 0,
        };
        let mut e = entry(64 + i, offset, if i == 7 { 3 } else { 100 + i }, flags);
        if i == 9 {
            e.row.time = None;
        }
        offset = e.end() + (i % 2) * 11;
        entries.push(e);
    }
    let boundaries_before = 4;
    let mut generation = boundaries_before;
    for e in &mut entries {
        generation += u64::from(e.is_boundary());
        e.row.generation = generation;
    }
    let totals = Totals {
        input_tokens: 10,
        api_calls: 2,
        ..Totals::default()
    };
    let block = encode(&entries, totals, boundaries_before).unwrap();
    let mut bytes = Vec::new();
    schema::encode(&block, &mut bytes);
    let decoded = decode(1, &bytes).unwrap();
    assert_eq!(decoded.entries, entries);
    let tokens: u64 = entries
        .iter()
        .filter(|e| e.is_token())
        .map(|e| e.tokens[0])
        .sum();
    assert_eq!(decoded.totals_after().input_tokens, 10 + u128::from(tokens));
    assert_eq!(decoded.totals_before(entries[0].offset), totals);
    // The same bytes read as another block number give other ordinals.
    assert_ne!(decode(2, &bytes).unwrap().entries, entries);
}

#[test]
fn blocks_are_written_as_postcard_writes_them() {
    let mut offset = 0;
    let mut entries = Vec::new();
    for i in 0..BLOCK_EVENTS {
        let flags = [flags::TOKEN, 0, flags::EXPLICIT_SEQ][i as usize % 3];
        // Seqs far apart (wrapping deltas), times before the epoch, and large counts.
        let seq = if i % 7 == 3 { u64::MAX - i } else { i * 1000 };
        let mut e = entry(128 + i, offset, seq, flags);
        e.row.time = match i % 4 {
            0 => None,
            1 => Timestamp::from_micros(-62_135_596_800_000_000 + i as i64),
            _ => Timestamp::from_micros(253_402_300_799_000_000 - i as i64 * 999_999),
        };
        e.row.type_id = [0, 127, 128, 16_383, 16_384, u32::MAX][i as usize % 6];
        if e.is_token() {
            e.tokens = [0, 127, 1 << 53, i];
        }
        e.row.len = [0, 127, 128, 1 << 40][i as usize % 4];
        offset = e.end() + i * i;
        entries.push(e);
    }
    for (count, totals) in [
        (1, Totals::default()),
        (
            BLOCK_EVENTS as usize,
            Totals {
                input_tokens: u128::MAX >> 1,
                output_tokens: 1 << 70,
                cached_tokens: 300,
                thinking_tokens: 0,
                api_calls: u64::MAX / 3,
            },
        ),
    ] {
        let part = &entries[..count];
        let mut expected = Vec::new();
        schema::encode(&encode(part, totals, 0).unwrap(), &mut expected);
        let mut written = Vec::new();
        encode_into(2, part, (totals, 0), &mut written).unwrap();
        assert_eq!(written, expected, "{count} events");
        assert_eq!(decode(2, &written).unwrap().entries, part);
    }
    // Not that block's events, or out of file order: refused.
    let mut written = Vec::new();
    assert!(encode_into(1, &entries, (Totals::default(), 0), &mut written).is_err());
    let mut swapped = entries[..2].to_vec();
    swapped.swap(0, 1);
    (swapped[0].ordinal, swapped[1].ordinal) = (128, 129);
    assert!(encode_into(2, &swapped, (Totals::default(), 0), &mut written).is_err());
}

/// The checks [`decode`] makes, applied to postcard's own reading of the bytes: the
/// reference the field-by-field reader must agree with.
fn decode_with_postcard(number: u64, bytes: &[u8]) -> Option<Vec<Entry>> {
    let block: Block = schema::decode(bytes)?;
    let mut rebuilt = Vec::new();
    schema::encode(&block, &mut rebuilt);
    decode(number, &rebuilt).map(|b| b.entries)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 3000, ..Default::default() })]

    /// On any bytes with a valid crc, the field-by-field reader accepts exactly what
    /// postcard accepts and reads the same block.
    #[test]
    fn blocks_are_read_as_postcard_reads_them(
        body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
        number in 0u64..4,
    ) {
        let mut bytes = body.clone();
        bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        let ours = decode(number, &bytes).map(|b| b.entries);
        let theirs = decode_with_postcard(number, &bytes);
        proptest::prop_assert_eq!(ours, theirs);
    }

    /// And on mostly valid blocks (the arbitrary bytes above rarely are one).
    #[test]
    fn edited_blocks_are_read_as_postcard_reads_them(
        count in 1usize..=64,
        edits in proptest::collection::vec((proptest::prelude::any::<proptest::sample::Index>(), proptest::prelude::any::<u8>()), 0..3),
    ) {
        let mut entries = Vec::new();
        let mut offset = 7;
        for i in 0..count as u64 {
            let e = entry(i, offset, i * 3, [flags::TOKEN, 0][i as usize % 2]);
            offset = e.end();
            entries.push(e);
        }
        let mut bytes = Vec::new();
        encode_into(0, &entries, (Totals::default(), 0), &mut bytes).unwrap();
        let mut body = bytes[..bytes.len() - 4].to_vec();
        for (at, byte) in &edits {
            let i = at.index(body.len());
            body[i] = *byte;
        }
        let mut edited = body.clone();
        edited.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        let ours = decode(0, &edited).map(|b| b.entries);
        proptest::prop_assert_eq!(&ours, &decode_with_postcard(0, &edited));
        if edits.is_empty() {
            proptest::prop_assert_eq!(ours, Some(entries));
        }
    }
}

#[test]
fn varints_are_bounded_as_postcard_bounds_them() {
    let mut bytes = Vec::new();
    encode_into(0, &[entry(0, 0, 0, 0)], (Totals::default(), 0), &mut bytes).unwrap();
    // The first field, the block's first offset (0), is the byte 0x00: write it longer.
    let with_first = |varint: &[u8]| {
        let mut body = varint.to_vec();
        body.extend_from_slice(&bytes[1..bytes.len() - 4]);
        let crc = crc32fast::hash(&body);
        body.extend_from_slice(&crc.to_le_bytes());
        body
    };
    // Overlong but in range: both read 0.
    let overlong = with_first(&[0x80, 0x80, 0x00]);
    assert!(decode(0, &overlong).is_some());
    assert_eq!(
        decode(0, &overlong).map(|b| b.entries),
        decode_with_postcard(0, &overlong)
    );
    // Ten bytes whose last one carries more than a u64's 64th bit: both refuse.
    let mut too_big = vec![0x80; 9];
    too_big.push(0x02);
    let too_big = with_first(&too_big);
    assert!(decode(0, &too_big).is_none());
    assert!(decode_with_postcard(0, &too_big).is_none());
    // Eleven bytes: both refuse.
    let mut too_long = vec![0x80; 10];
    too_long.push(0x00);
    let too_long = with_first(&too_long);
    assert!(decode(0, &too_long).is_none());
    assert!(decode_with_postcard(0, &too_long).is_none());
    // A u128 (the third field, the totals' input tokens, also 0x00): 19 bytes whose last
    // one carries bits past the 128th, which a shift would drop: both refuse.
    assert_eq!(&bytes[..3], &[0, 0, 0]);
    let mut body = vec![0, 0];
    body.extend(vec![0x80; 18]);
    body.push(0x04);
    body.extend_from_slice(&bytes[3..bytes.len() - 4]);
    let crc = crc32fast::hash(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    assert!(decode_with_postcard(0, &body).is_none());
    assert!(decode(0, &body).is_none());
}

#[test]
fn a_prefix_is_the_first_events_and_never_served_as_the_whole_block() {
    use redb::ReadableDatabase;
    let entries: Vec<Entry> = (0..BLOCK_EVENTS)
        .map(|i| entry(i, i * 10, i, [0, flags::TOKEN][i as usize % 2]))
        .collect();
    let backend = redb::backends::InMemoryBackend::new();
    let db = redb::Database::builder()
        .create_with_backend(backend)
        .unwrap();
    let txn = db.begin_write().unwrap();
    write(&txn, &entries, &mut Vec::new()).unwrap();
    txn.commit().unwrap();
    let read = db.begin_read().unwrap();
    let whole = |block: Option<&DecodedBlock>| block.map(|b| b.entries.clone());
    for slots in [1, 5, 63, 64, 100] {
        let mut reader = BlockReader::open(&read).unwrap();
        let prefix = reader.block_prefix(0, slots).unwrap().unwrap();
        assert_eq!(prefix.entries, entries[..slots.min(BLOCK_EVENTS) as usize]);
        // A longer prefix than the cached one decodes again; a shorter one is served.
        let longer = reader.block_prefix(0, slots + 1).unwrap().unwrap();
        assert_eq!(
            longer.entries,
            entries[..(slots + 1).min(BLOCK_EVENTS) as usize]
        );
        let shorter = reader.block_prefix(0, slots).unwrap().unwrap();
        assert_eq!(shorter.entries.len() as u64, (slots + 1).min(BLOCK_EVENTS));
        // Whole-block reads never see a prefix, even for events inside it.
        assert_eq!(
            whole(reader.block_at(entries[0].offset).unwrap()),
            Some(entries.clone())
        );
        reader.block_prefix(0, slots).unwrap();
        assert_eq!(
            whole(reader.block_before(entries[0].offset + 1).unwrap()),
            Some(entries.clone())
        );
        reader.block_prefix(0, slots).unwrap();
        assert_eq!(whole(reader.block(0).unwrap()), Some(entries.clone()));
        reader.block_prefix(0, slots).unwrap();
        let last = reader.event(BLOCK_EVENTS - 1).unwrap().cloned();
        assert_eq!(last.as_ref(), entries.last());
        assert!(reader.block_prefix(1, 3).unwrap().is_none());
    }
}

#[test]
fn contradictory_blocks_are_damaged() {
    let good = encode(&[entry(0, 0, 0, flags::TOKEN)], Totals::default(), 0).unwrap();
    let check = |block: &Block| {
        let mut bytes = Vec::new();
        schema::encode(block, &mut bytes);
        decode(0, &bytes).is_some()
    };
    assert!(check(&good));
    let mut bad = good.clone();
    bad.entries[0].tokens = None;
    assert!(!check(&bad), "a token event without counts");
    let mut bad = good.clone();
    bad.entries[0].flags = flags::TOKEN | flags::BOUNDARY;
    assert!(!check(&bad), "both kinds");
    let mut bad = good.clone();
    bad.entries[0].flags |= 0x40;
    assert!(!check(&bad), "an unknown flag");
    let mut bad = good.clone();
    bad.entries[0].gap = 1;
    assert!(!check(&bad), "a first event away from the block's start");
    let mut bad = good.clone();
    bad.entries[0].time_delta = Some(i64::MAX);
    assert!(!check(&bad), "a timestamp out of range");
    let mut bad = good.clone();
    bad.entries.clear();
    assert!(!check(&bad), "an empty block");
    let mut bad = good;
    bad.entries = vec![bad.entries[0].clone(); 65];
    assert!(!check(&bad), "too many events");
}
