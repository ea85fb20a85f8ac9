//! One frame of the frames file: a 24-byte checksummed header and a zstd frame holding whole
//! transcript lines. The layout is in docs/FORMAT.md, "The archive".

use std::io::Read;

/// The first bytes of every frame.
pub(crate) const FRAME_MAGIC: [u8; 4] = *b"ALFR";
/// The header's size.
pub(crate) const FRAME_HEADER: usize = 24;
/// The most raw bytes a frame may say it holds (a single line longer than this is refused),
/// so a damaged or hostile header cannot make a reader allocate more.
pub(crate) const MAX_FRAME_RAW: u32 = 1 << 30;
/// The zstd level frames are written at (zstd's own default, as `zstd -3`).
pub(crate) const LEVEL: i32 = 3;
/// The log2 size of the match finder's hash table: one above level 3's 17 for a frame's 4 MiB,
/// so more of a transcript's repeated lines are found (about 1% smaller frames; one core
/// archives as fast, measured alternated).
const HASH_LOG: u32 = 18;
/// The shortest match the match finder takes: one above level 3's 5, so a transcript's JSON
/// punctuation is not matched in pieces (about 1% smaller frames and faster, `zstd -b` on 100 MB
/// of transcript in 4 MiB blocks).
const MIN_MATCH: u32 = 6;

/// A frame's header fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FrameHeader {
    /// Bytes of the zstd frame after the header.
    pub(crate) comp_len: u32,
    /// Bytes it decompresses to.
    pub(crate) raw_len: u32,
    /// CRC-32 of the decompressed bytes.
    pub(crate) raw_crc: u32,
    /// CRC-32 of the compressed bytes.
    pub(crate) comp_crc: u32,
}

/// What is wrong with a frame.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameDamage {
    /// The frame lies (partly) past the end of the frames file.
    #[error("the frame lies past the end of the frames file")]
    Missing,
    /// The header's magic or checksum is wrong.
    #[error("the frame header is damaged")]
    Header,
    /// The header does not describe the frame the index names.
    #[error("the frame header does not match its index record")]
    Mismatch,
    /// The compressed bytes do not match their checksum.
    #[error("the compressed bytes do not match their checksum")]
    Payload,
    /// zstd cannot decompress them.
    #[error("the compressed bytes do not decompress: {0}")]
    Decompress(String),
    /// The decompressed bytes do not match their length or checksum.
    #[error("the decompressed bytes do not match their length or checksum")]
    Content,
}

/// Compresses `raw` (whole lines) into a frame: header and zstd bytes.
pub(crate) fn encode(raw: &[u8]) -> std::io::Result<Vec<u8>> {
    let raw_len = u32::try_from(raw.len())
        .ok()
        .filter(|&n| n <= MAX_FRAME_RAW)
        .ok_or_else(|| std::io::Error::other("frame too large"))?;
    let mut compressor = zstd::bulk::Compressor::new(LEVEL)?;
    compressor.set_parameter(zstd::zstd_safe::CParameter::HashLog(HASH_LOG))?;
    compressor.set_parameter(zstd::zstd_safe::CParameter::MinMatch(MIN_MATCH))?;
    let comp = compressor.compress(raw)?;
    let comp_len =
        u32::try_from(comp.len()).map_err(|_| std::io::Error::other("frame too large"))?;
    let header = FrameHeader {
        comp_len,
        raw_len,
        raw_crc: crc32fast::hash(raw),
        comp_crc: crc32fast::hash(&comp),
    };
    let mut out = Vec::with_capacity(FRAME_HEADER + comp.len());
    out.extend_from_slice(&header.to_bytes());
    out.extend_from_slice(&comp);
    Ok(out)
}

impl FrameHeader {
    fn to_bytes(self) -> [u8; FRAME_HEADER] {
        let mut b = [0u8; FRAME_HEADER];
        b[0..4].copy_from_slice(&FRAME_MAGIC);
        b[4..8].copy_from_slice(&self.comp_len.to_le_bytes());
        b[8..12].copy_from_slice(&self.raw_len.to_le_bytes());
        b[12..16].copy_from_slice(&self.raw_crc.to_le_bytes());
        b[16..20].copy_from_slice(&self.comp_crc.to_le_bytes());
        let crc = crc32fast::hash(&b[0..20]);
        b[20..24].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Reads a header, checking its magic, checksum and size bound.
    pub(crate) fn parse(bytes: &[u8]) -> Result<FrameHeader, FrameDamage> {
        let field = |at: usize| {
            bytes
                .get(at..at + 4)
                .and_then(|s| <[u8; 4]>::try_from(s).ok())
                .map(u32::from_le_bytes)
        };
        let head = bytes.get(0..20).ok_or(FrameDamage::Missing)?;
        let stored = field(20).ok_or(FrameDamage::Missing)?;
        if head.get(0..4) != Some(&FRAME_MAGIC[..]) || crc32fast::hash(head) != stored {
            return Err(FrameDamage::Header);
        }
        let header = FrameHeader {
            comp_len: field(4).ok_or(FrameDamage::Header)?,
            raw_len: field(8).ok_or(FrameDamage::Header)?,
            raw_crc: field(12).ok_or(FrameDamage::Header)?,
            comp_crc: field(16).ok_or(FrameDamage::Header)?,
        };
        if header.raw_len > MAX_FRAME_RAW {
            return Err(FrameDamage::Header);
        }
        Ok(header)
    }

    /// The whole frame's length, header included.
    pub(crate) fn frame_len(self) -> u64 {
        FRAME_HEADER as u64 + u64::from(self.comp_len)
    }
}

/// Decodes a whole frame (header and compressed bytes), checking every checksum. Memory grows
/// with the bytes actually decompressed, never with what a header claims.
#[cfg(test)]
pub(crate) fn decode(frame: &[u8]) -> Result<Vec<u8>, FrameDamage> {
    let mut raw = Vec::new();
    decode_into(frame, &mut raw)?;
    Ok(raw)
}

/// [`decode`], the bytes appended to `out` (which keeps its length on damage): a reader of
/// many frames decompresses straight into one buffer, reserved once.
pub(crate) fn decode_into(frame: &[u8], out: &mut Vec<u8>) -> Result<(), FrameDamage> {
    let header = FrameHeader::parse(frame)?;
    let comp = frame
        .get(FRAME_HEADER..)
        .and_then(|rest| rest.get(..header.comp_len as usize))
        .ok_or(FrameDamage::Missing)?;
    if crc32fast::hash(comp) != header.comp_crc {
        return Err(FrameDamage::Payload);
    }
    let start = out.len();
    let decoded = (|| {
        let decoder = zstd::stream::read::Decoder::with_buffer(comp)
            .map_err(|e| FrameDamage::Decompress(e.to_string()))?;
        decoder
            .take(u64::from(header.raw_len) + 1)
            .read_to_end(out)
            .map_err(|e| FrameDamage::Decompress(e.to_string()))?;
        let raw = out.get(start..).unwrap_or_default();
        if raw.len() != header.raw_len as usize || crc32fast::hash(raw) != header.raw_crc {
            return Err(FrameDamage::Content);
        }
        Ok(())
    })();
    if decoded.is_err() {
        out.truncate(start);
    }
    decoded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_round_trips_and_every_flipped_bit_is_caught() {
        let raw = b"{\"a\":1}\n{\"b\":2}\n".repeat(20);
        let frame = encode(&raw).unwrap();
        assert_eq!(decode(&frame).unwrap(), raw);
        for bit in 0..frame.len() * 8 {
            let mut bad = frame.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(decode(&bad).is_err(), "bit {bit} not caught");
        }
        for cut in 0..frame.len() {
            assert!(decode(&frame[..cut]).is_err(), "cut at {cut} not caught");
        }
    }
}
