//! The progress bar of a command that reads many transcript files.

use std::io::IsTerminal;
use std::sync::OnceLock;

use indicatif::{ProgressBar, ProgressDrawTarget};

/// Only runs reading this many files get a bar.
const PROGRESS_FILES: usize = 20;

/// A bar on stderr, drawn from the first call that counts at least [`PROGRESS_FILES`] files
/// if stderr is a terminal (and the bar is wanted); `Sync`, as parallel reads report to it.
pub struct FilesBar {
    bar: OnceLock<Option<ProgressBar>>,
    message: &'static str,
    wanted: bool,
}

impl FilesBar {
    /// A bar saying `message`, never drawn unless `wanted`.
    pub fn new(message: &'static str, wanted: bool) -> FilesBar {
        FilesBar {
            bar: OnceLock::new(),
            message,
            wanted,
        }
    }

    /// `done` of `total` files read.
    pub fn update(&self, done: usize, total: usize) {
        let bar = self.bar.get_or_init(|| {
            (self.wanted && total >= PROGRESS_FILES && std::io::stderr().is_terminal()).then(|| {
                let bar =
                    ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
                bar.set_message(self.message);
                bar
            })
        });
        if let Some(bar) = bar {
            bar.set_position(done as u64);
        }
    }

    /// Clears the bar, if one was drawn.
    pub fn finish(&self) {
        if let Some(Some(bar)) = self.bar.get() {
            bar.finish_and_clear();
        }
    }
}
