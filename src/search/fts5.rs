//! FTS5's C interface, which rusqlite does not wrap: the match-count function and the
//! tokenizer. This is the crate's one module with `unsafe` code (docs/DECISIONS.md, "Match
//! counts and marks come from FTS5's C interface").
//!
//! **Match counts.** A document's match count is the number of runs `highlight()` marks
//! (docs/SEARCH.md, "Ranking"). Running `highlight()` over every candidate re-reads and
//! re-tokenizes its text; reading the query's token positions through `fts5vocab` costs about
//! 0.2 µs a position, which for a phrase with a common word ("the file") is the whole index's
//! "the". FTS5 hands an auxiliary function the instances of the row being matched (phrase,
//! column, token offset) from the position lists it has just read; [`RUNS_FN`] merges them as
//! `highlight()` does: an instance starting at or before the end of the run so far joins it
//! (overlapping, as the phrase "a a" in "a a a"); an adjacent one starts a new run.
//!
//! **Tokens.** [`Tokenizer`] is the indexes' own `unicode61` tokenizer, called directly, so a
//! page's texts are marked without copying them into an FTS5 table (`marked`).
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};
use std::ptr;

use rusqlite::{Connection, ffi};

/// The auxiliary function giving the match count of the row being matched, as
/// `agentlog_runs(table)` in a statement that matches `table`.
pub(crate) const RUNS_FN: &str = "agentlog_runs";

/// The match count of a candidate in a ranking statement over the FTS5 table `table`.
pub(crate) fn runs_sql(table: &str) -> String {
    format!("{RUNS_FN}({table})")
}

/// Registers [`RUNS_FN`] on `conn` (auxiliary functions belong to one connection).
pub(crate) fn install(conn: &Connection) -> rusqlite::Result<()> {
    let api = fts5_api(conn)?;
    // SAFETY: `api` is the connection's live `fts5_api` (checked non-null).
    let create = unsafe { (*api).xCreateFunction }.ok_or_else(|| failure(ffi::SQLITE_MISUSE))?;
    // SAFETY: `api` is valid while the connection is open; the name is a NUL-terminated
    // static string that FTS5 copies; the function keeps no user data, so nothing to destroy.
    let rc = unsafe {
        create(
            api,
            c"agentlog_runs".as_ptr(),
            ptr::null_mut(),
            Some(runs),
            None,
        )
    };
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(failure(rc))
    }
}

fn failure(rc: c_int) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None)
}

/// The connection's `fts5_api`, as SQLite documents getting it: `SELECT fts5(?1)` with a
/// pointer bound under the type `fts5_api_ptr`, which FTS5 fills in.
fn fts5_api(conn: &Connection) -> rusqlite::Result<*mut ffi::fts5_api> {
    let mut api: *mut ffi::fts5_api = ptr::null_mut();
    // SAFETY: the handle is the open connection's; the statement is prepared, bound, stepped
    // and finalized here, on this thread, while `api` (the bound pointer's target) lives.
    let (prepared, stepped) = unsafe {
        let db = conn.handle();
        let mut stmt: *mut ffi::sqlite3_stmt = ptr::null_mut();
        let prepared = ffi::sqlite3_prepare_v2(
            db,
            c"SELECT fts5(?1)".as_ptr(),
            -1,
            &raw mut stmt,
            ptr::null_mut(),
        );
        let mut stepped = ffi::SQLITE_ERROR;
        if prepared == ffi::SQLITE_OK {
            let bound = ffi::sqlite3_bind_pointer(
                stmt,
                1,
                (&raw mut api).cast::<c_void>(),
                c"fts5_api_ptr".as_ptr(),
                None,
            );
            if bound == ffi::SQLITE_OK {
                stepped = ffi::sqlite3_step(stmt);
            }
        }
        ffi::sqlite3_finalize(stmt);
        (prepared, stepped)
    };
    if prepared != ffi::SQLITE_OK {
        return Err(failure(prepared));
    }
    if stepped != ffi::SQLITE_ROW || api.is_null() {
        return Err(failure(ffi::SQLITE_ERROR));
    }
    Ok(api)
}

/// The auxiliary function: the runs of the row's instances in column 0 (the indexes' tables
/// have one column, and `highlight(table, 0, ...)` marks it).
///
/// # Safety
/// Called by FTS5 with its extension API and the context of the row being matched.
unsafe extern "C" fn runs(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    _n_args: c_int,
    _args: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: FTS5 passes a valid API table and row context for the duration of the call.
    let counted = unsafe { count_runs(&*api, fts) };
    // SAFETY: `ctx` is this call's result context.
    unsafe {
        match counted {
            Ok(n) => ffi::sqlite3_result_int64(ctx, n),
            Err(rc) => ffi::sqlite3_result_error_code(ctx, rc),
        }
    }
}

/// Merges the row's instances (FTS5 gives them by column, then offset) into runs.
///
/// # Safety
/// `api` and `fts` are the ones FTS5 passed to the auxiliary function.
unsafe fn count_runs(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
) -> Result<i64, c_int> {
    let (Some(inst_count), Some(inst), Some(phrase_size)) =
        (api.xInstCount, api.xInst, api.xPhraseSize)
    else {
        return Err(ffi::SQLITE_MISUSE);
    };
    let mut n: c_int = 0;
    // SAFETY: the pointers are FTS5's, as the caller guarantees; `n` outlives the call.
    let rc = unsafe { inst_count(fts, &raw mut n) };
    if rc != ffi::SQLITE_OK {
        return Err(rc);
    }
    let mut count = 0i64;
    let mut end = i64::MIN;
    for i in 0..n {
        let (mut phrase, mut column, mut offset): (c_int, c_int, c_int) = (0, 0, 0);
        // SAFETY: `i` is below the instance count; the out-pointers outlive the call.
        let rc = unsafe { inst(fts, i, &raw mut phrase, &raw mut column, &raw mut offset) };
        if rc != ffi::SQLITE_OK {
            return Err(rc);
        }
        if column != 0 {
            continue;
        }
        // SAFETY: `phrase` is one of the query's phrases, as FTS5 just reported.
        let size = unsafe { phrase_size(fts, phrase) };
        let start = i64::from(offset);
        let last = start + i64::from(size) - 1;
        if count > 0 && start <= end {
            end = end.max(last);
        } else {
            count += 1;
            end = last;
        }
    }
    Ok(count)
}

/// The `unicode61` tokenizer with its default options, as every index table declares it.
pub(crate) struct Tokenizer {
    module: ffi::fts5_tokenizer,
    instance: *mut ffi::Fts5Tokenizer,
}

/// One token: the folded text's bytes and where the token is in the text (byte offsets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token<'t> {
    /// The token as the index holds it (case and diacritics folded).
    pub text: &'t [u8],
    /// Its first byte in the text.
    pub start: usize,
    /// One past its last byte in the text.
    pub end: usize,
}

/// What a document or a query is tokenized as (FTS5 passes it on; `unicode61` treats both
/// alike).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Purpose {
    /// A document's text.
    Document,
    /// A query's phrase.
    Query,
}

impl Tokenizer {
    /// The tokenizer of `conn`'s FTS5.
    pub(crate) fn new(conn: &Connection) -> rusqlite::Result<Tokenizer> {
        let api = fts5_api(conn)?;
        let mut user_data: *mut c_void = ptr::null_mut();
        let mut module = ffi::fts5_tokenizer {
            xCreate: None,
            xDelete: None,
            xTokenize: None,
        };
        // SAFETY: `api` is the connection's live `fts5_api` (checked non-null).
        let find = unsafe { (*api).xFindTokenizer }.ok_or_else(|| failure(ffi::SQLITE_MISUSE))?;
        // SAFETY: FTS5 fills `user_data` and copies the module's functions into `module`.
        let rc = unsafe {
            find(
                api,
                c"unicode61".as_ptr(),
                &raw mut user_data,
                &raw mut module,
            )
        };
        if rc != ffi::SQLITE_OK {
            return Err(failure(rc));
        }
        let (Some(create), Some(_), Some(_)) = (module.xCreate, module.xDelete, module.xTokenize)
        else {
            return Err(failure(ffi::SQLITE_MISUSE));
        };
        let mut instance: *mut ffi::Fts5Tokenizer = ptr::null_mut();
        // SAFETY: no arguments (the default options); FTS5 writes the new instance.
        let rc = unsafe { create(user_data, ptr::null_mut(), 0, &raw mut instance) };
        if rc != ffi::SQLITE_OK || instance.is_null() {
            return Err(failure(if rc == ffi::SQLITE_OK {
                ffi::SQLITE_ERROR
            } else {
                rc
            }));
        }
        Ok(Tokenizer { module, instance })
    }

    /// Calls `each` with every token of `text`, in order, until it answers `false`.
    pub(crate) fn tokenize(
        &self,
        text: &str,
        purpose: Purpose,
        mut each: impl FnMut(Token<'_>) -> bool,
    ) -> rusqlite::Result<()> {
        let Ok(len) = c_int::try_from(text.len()) else {
            return Err(failure(ffi::SQLITE_TOOBIG));
        };
        let flags = match purpose {
            Purpose::Document => ffi::FTS5_TOKENIZE_DOCUMENT,
            Purpose::Query => ffi::FTS5_TOKENIZE_QUERY,
        };
        let Some(tokenize) = self.module.xTokenize else {
            return Err(failure(ffi::SQLITE_MISUSE));
        };
        let mut sink: &mut dyn FnMut(Token<'_>) -> bool = &mut each;
        // SAFETY: the instance is live until `drop`; the text outlives the call; the context
        // is `sink`, which `token` reads back as the same type during the call only.
        let rc = unsafe {
            tokenize(
                self.instance,
                (&raw mut sink).cast::<c_void>(),
                flags,
                text.as_ptr().cast(),
                len,
                Some(token),
            )
        };
        if rc == ffi::SQLITE_OK || rc == STOPPED {
            Ok(())
        } else {
            Err(failure(rc))
        }
    }
}

impl Drop for Tokenizer {
    fn drop(&mut self) {
        if let Some(delete) = self.module.xDelete {
            // SAFETY: the instance was made by this module's `xCreate` and is deleted once.
            unsafe { delete(self.instance) };
        }
    }
}

/// What [`token`] answers to stop the tokenizer early (any code but `SQLITE_OK` stops it).
const STOPPED: c_int = ffi::SQLITE_DONE;

/// The tokenizer's callback: hands each token to the sink [`Tokenizer::tokenize`] passed.
///
/// # Safety
/// `ctx` is a `*mut &mut dyn FnMut(Token) -> bool`; `text` points to `len` bytes.
unsafe extern "C" fn token(
    ctx: *mut c_void,
    _flags: c_int,
    text: *const std::ffi::c_char,
    len: c_int,
    start: c_int,
    end: c_int,
) -> c_int {
    let (Ok(len), Ok(start), Ok(end)) = (
        usize::try_from(len),
        usize::try_from(start),
        usize::try_from(end),
    ) else {
        return ffi::SQLITE_ERROR;
    };
    // SAFETY: as documented above; FTS5 keeps the token's bytes valid during the call (an
    // empty token may come without them).
    let (sink, bytes) = unsafe {
        let bytes: &[u8] = if len == 0 || text.is_null() {
            &[]
        } else {
            std::slice::from_raw_parts(text.cast::<u8>(), len)
        };
        (&mut *ctx.cast::<&mut dyn FnMut(Token<'_>) -> bool>(), bytes)
    };
    let go_on = sink(Token {
        text: bytes,
        start,
        end,
    });
    if go_on { ffi::SQLITE_OK } else { STOPPED }
}

#[cfg(test)]
mod tests;
