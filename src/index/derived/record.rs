//! The layout every index shares: a `meta` table holding the format version and the meta
//! record, and one encoding for every value that is not a plain integer, postcard followed by
//! a little-endian crc32 of the postcard bytes, so that a damaged row is detected rather than
//! believed.

use redb::{ReadTransaction, TableDefinition, WriteTransaction};
use serde::{Serialize, de::DeserializeOwned};

use super::contain::Leak;
use super::outcome::StaleReason;

/// `"format"` → the index's format version (u32 LE); `"meta"` → its meta record.
pub const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// The key of the format version in [`META`].
pub const FORMAT_KEY: &str = "format";
/// The key of the meta record in [`META`].
pub const META_KEY: &str = "meta";

/// Encodes a value as postcard plus crc32 into `out` (emptied first).
pub fn encode<T: Serialize>(value: &T, out: &mut Vec<u8>) {
    out.clear();
    // Serializing plain structs into a Vec cannot fail; an empty value would fail its crc
    // check on read and so be treated as damage, never believed.
    if let Ok(bytes) = postcard::to_extend(value, std::mem::take(out)) {
        *out = bytes;
    }
    seal(out);
}

/// [`encode`] into a new vector.
pub(crate) fn encoded<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    encode(value, &mut out);
    out
}

/// Appends the little-endian crc32 of the value bytes in `out`, as [`encode`] does.
pub(crate) fn seal(out: &mut Vec<u8>) {
    let crc = crc32fast::hash(out);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// The value bytes of a stored value (postcard, before its crc); `None` if the crc is wrong.
pub(crate) fn checked_body(bytes: &[u8]) -> Option<&[u8]> {
    let split = bytes.len().checked_sub(4)?;
    let (body, crc) = bytes.split_at(split);
    let crc = u32::from_le_bytes(crc.try_into().ok()?);
    (crc32fast::hash(body) == crc).then_some(body)
}

/// Decodes a value written by [`encode`]; `None` if the checksum or the encoding is wrong.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    postcard::from_bytes(checked_body(bytes)?).ok()
}

/// What reading the meta table found.
pub(crate) enum MetaRead<M> {
    /// A new, empty index: no table at all.
    Empty,
    /// Something that cannot be used as is.
    Stale(StaleReason),
    /// A meta record of this format.
    Found(Box<M>),
}

/// Reads the format version and, if it is `format`, the meta record.
pub(crate) fn read_meta<M: DeserializeOwned>(
    txn: &ReadTransaction,
    format: u32,
) -> Result<MetaRead<M>, redb::Error> {
    let unreadable = |detail: &str| {
        MetaRead::Stale(StaleReason::Unreadable {
            detail: detail.to_owned(),
        })
    };
    let table = match txn.open_table(META) {
        Ok(table) => Leak::new(table),
        // A new file has no tables at all. Rows without a meta record are what is left of a
        // damaged file: building on top of them would keep the rows a new build does not
        // overwrite.
        Err(redb::TableError::TableDoesNotExist(_)) => {
            return Ok(match txn.list_tables()?.next() {
                None => MetaRead::Empty,
                Some(_) => unreadable("tables without a meta record"),
            });
        }
        Err(e) => return Err(e.into()),
    };
    let table = table.get()?;
    let Some(found) = table.get(FORMAT_KEY)? else {
        return Ok(unreadable("no format record"));
    };
    let Ok(found) = <[u8; 4]>::try_from(found.value()) else {
        return Ok(unreadable("malformed format record"));
    };
    let found = u32::from_le_bytes(found);
    if found != format {
        return Ok(MetaRead::Stale(StaleReason::FormatChanged {
            found,
            expected: format,
        }));
    }
    let Some(meta) = table.get(META_KEY)? else {
        return Ok(unreadable("no meta record"));
    };
    Ok(match decode::<M>(meta.value()) {
        Some(meta) => MetaRead::Found(Box::new(meta)),
        None => unreadable("the meta record fails its checksum"),
    })
}

/// Writes the format version and the meta record (encoded through `scratch`).
pub(crate) fn write_meta<M: Serialize>(
    txn: &WriteTransaction,
    format: u32,
    meta: &M,
    scratch: &mut Vec<u8>,
) -> Result<(), redb::Error> {
    let mut table = Leak::new(txn.open_table(META)?);
    table
        .get_mut()?
        .insert(FORMAT_KEY, format.to_le_bytes().as_slice())?;
    encode(meta, scratch);
    table.get_mut()?.insert(META_KEY, scratch.as_slice())?;
    Ok(())
}

/// Checks that `value` round-trips through [`encode`] and [`decode`], and that every flipped
/// byte and a cut value are detected (never decoded): for each kind's row types.
#[cfg(test)]
pub(crate) fn assert_round_trips<T>(value: &T)
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let bytes = encoded(value);
    assert_eq!(decode::<T>(&bytes).as_ref(), Some(value));
    for i in 0..bytes.len() {
        for flip in [0x10, 0x40] {
            let mut damaged = bytes.clone();
            damaged[i] ^= flip;
            assert_eq!(decode::<T>(&damaged), None, "flip {flip:#x} at {i}");
        }
    }
    assert_eq!(decode::<T>(&bytes[..3]), None);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_damage_is_detected() {
        assert_round_trips(&(
            1000_u64,
            Some(-5_i64),
            "a name".to_owned(),
            vec![1_u8, 2, 3],
        ));
    }
}
