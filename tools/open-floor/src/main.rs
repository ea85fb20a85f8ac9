//! The least an open-to-answer could cost on this machine, with no index library at all: open a
//! small file holding the answer and read 512 bytes of it, then open the log, take its length,
//! read a window at its head and one at its tail and checksum both (what validation must do to
//! notice a rewritten or truncated log). Timed with 4 KiB windows and with the 64 KiB windows the
//! index format uses today.
//!
//! ```sh
//! cargo run --release --manifest-path tools/open-floor/Cargo.toml -- LOG SMALL_FILE
//! ```

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

/// Opens per figure; the best of [`ROUNDS`] rounds is reported.
const OPENS: u32 = 100_000;
const ROUNDS: usize = 5;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [log, small] = args.as_slice() else {
        eprintln!("usage: agentlog-open-floor LOG SMALL_FILE");
        return ExitCode::FAILURE;
    };
    for window in [4usize << 10, 64 << 10] {
        match floor(Path::new(log), Path::new(small), window) {
            Ok(secs) => println!(
                "{:2} KiB windows: {:.2} µs per open-to-answer",
                window >> 10,
                secs * 1e6
            ),
            Err(e) => {
                eprintln!("open-floor: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// Seconds per open-to-answer, the best round's mean.
fn floor(log: &Path, small: &Path, window: usize) -> std::io::Result<f64> {
    let mut buf = vec![0u8; window];
    let mut best = f64::MAX;
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let mut checksums = 0u32;
        for _ in 0..OPENS {
            let answer = File::open(small)?;
            answer.read_at(&mut buf[..512.min(window)], 0)?;
            drop(answer);
            let file = File::open(log)?;
            let len = file.metadata()?.len();
            file.read_at(&mut buf, 0)?;
            checksums ^= crc32fast::hash(&buf);
            file.read_at(&mut buf, len.saturating_sub(window as u64))?;
            checksums ^= crc32fast::hash(&buf);
        }
        std::hint::black_box(checksums);
        best = best.min(started.elapsed().as_secs_f64() / f64::from(OPENS));
    }
    Ok(best)
}
