use super::*;
use crate::event::{Boundary, GenerationStart, MoltCount, Totals};
use crate::index::schema::{PARSER_VERSION, SeqState, TypesSum};
use crate::log::WindowSum;

fn meta() -> Meta {
    Meta {
        parser: PARSER_VERSION,
        profile: 0xdead_beef,
        max_line: 1 << 20,
        head: WindowSum {
            start: 0,
            len: 4096,
            crc: 7,
        },
        tail: WindowSum {
            start: 100,
            len: 4096,
            crc: 9,
        },
        running_crc: 11,
        fold: FoldState {
            end: 4196,
            lines: 40,
            events: 38,
            totals: Totals {
                input_tokens: 10,
                output_tokens: 20,
                api_calls: 3,
                ..Totals::default()
            },
            boundaries: 1,
            latest: Some(GenerationStart {
                ordinal: 1,
                totals_before: Totals {
                    input_tokens: 4,
                    ..Totals::default()
                },
                boundary: Boundary {
                    offset: 2000,
                    molt_count: MoltCount::Valid(1),
                    time: None,
                    initiator: "agent".to_owned(),
                    before_tokens: 0,
                    after_tokens: 0,
                },
            }),
            ..FoldState::default()
        },
        seqs: SeqState::default(),
        types: TypesSum::default(),
    }
}

#[test]
fn a_status_file_round_trips() {
    let meta = meta();
    let bytes = encode(&meta).unwrap();
    assert!(bytes.len() < 1024, "{} bytes", bytes.len());
    assert_eq!(decode(&bytes), Ok(meta));
}

#[test]
fn every_damage_is_refused_without_a_panic() {
    let bytes = encode(&meta()).unwrap();
    for cut in 0..bytes.len() {
        assert!(decode(&bytes[..cut]).is_err(), "truncated at {cut}");
    }
    for at in 0..bytes.len() {
        for bit in 0..8 {
            let mut damaged = bytes.clone();
            damaged[at] ^= 1 << bit;
            assert!(decode(&damaged).is_err(), "bit {bit} of byte {at} flipped");
        }
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(decode(&longer), Err(Refused::TooLong));
    assert_eq!(decode(&[]), Err(Refused::Short));
    assert_eq!(
        decode(&vec![0; MAX_STATUS_BYTES + 1]),
        Err(Refused::TooLong)
    );
}

#[test]
fn a_foreign_layout_or_index_format_is_refused() {
    let bytes = encode(&meta()).unwrap();
    let mut magic = bytes.clone();
    magic[..8].copy_from_slice(b"AGLUSNAP");
    assert_eq!(decode(&magic), Err(Refused::Magic));
    let mut layout = bytes.clone();
    layout[8..12].copy_from_slice(&(STATUS_VERSION + 1).to_le_bytes());
    assert_eq!(decode(&layout), Err(Refused::Layout(STATUS_VERSION + 1)));

    // A sealed body of another index format: header and checksum right, format wrong.
    let body = postcard::to_stdvec(&Body {
        index_format: FORMAT_VERSION + 1,
        meta: meta(),
    })
    .unwrap();
    assert_eq!(
        decode(&sealed(&body)),
        Err(Refused::IndexFormat(FORMAT_VERSION + 1))
    );
    // Trailing bytes under a right checksum.
    let mut body = postcard::to_stdvec(&Body {
        index_format: FORMAT_VERSION,
        meta: meta(),
    })
    .unwrap();
    body.push(0);
    assert_eq!(decode(&sealed(&body)), Err(Refused::Encoding));
}

fn sealed(body: &[u8]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&STATUS_VERSION.to_le_bytes());
    out.extend_from_slice(&u32::try_from(body.len()).unwrap().to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
    out.extend_from_slice(body);
    out
}

#[test]
fn a_status_too_large_for_its_file_is_not_written() {
    let mut meta = meta();
    if let Some(latest) = meta.fold.latest.as_mut() {
        latest.boundary.initiator = "x".repeat(MAX_STATUS_BYTES);
    }
    assert_eq!(encode(&meta), None);
}

#[test]
fn write_read_and_remove() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("events.index.redb");
    let path = status_path(&index);
    assert_eq!(path, dir.path().join("events.index.status"));
    assert_eq!(read(&path), None);
    write(&index, &meta()).unwrap();
    assert_eq!(read(&path), Some(meta()));
    // Nothing else is left in the folder: the temporary name was renamed.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    std::fs::write(&path, b"AGLSTATS garbage").unwrap();
    assert_eq!(read(&path), None);
    remove(&index);
    assert!(!path.exists());
    remove(&index);
}
