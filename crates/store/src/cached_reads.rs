//! Reads that never wait for the disk: the serving index's connections are opened through a
//! thin SQLite VFS over the platform's own, whose reads can be switched, for one query on one
//! thread, to "from the page cache or not at all" (Linux `preadv2` with `RWF_NOWAIT`) within a
//! byte budget. A point lookup run that way may run on an async worker: it either finishes
//! from memory, having copied at most the budget, or gives up at once without having waited,
//! and the caller runs it again on a blocking thread (see [`crate::Store::try_cached`]).
//!
//! Every other read, and every read outside such a query, goes to the platform VFS unchanged.
use rusqlite::ffi;
use std::cell::Cell;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

/// The name the serving connections open the index with.
pub(crate) const NAME: &CStr = c"olm-registry-cached";

thread_local! {
    /// Bytes the query running on this thread may still read, when it may read only what is
    /// cached; `None` outside such a query.
    static BUDGET: Cell<Option<usize>> = const { Cell::new(None) };
    /// Whether a read of that query was refused (it would have waited, or gone over budget).
    static REFUSED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with this thread's reads limited to cached data and `budget` bytes. Returns `None`
/// when a read was refused: whatever `f` made of the failed read is thrown away.
pub(crate) fn within<T>(budget: usize, f: impl FnOnce() -> T) -> Option<T> {
    /// Restores normal reads even if `f` panics.
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            BUDGET.set(None);
        }
    }
    BUDGET.set(Some(budget));
    REFUSED.set(false);
    let _reset = Reset;
    let out = f();
    (!REFUSED.replace(false)).then_some(out)
}

/// Registers the VFS once; false when it cannot be (no platform VFS, or one without a method
/// this one forwards to), and the index is then opened without it. The forwarding methods
/// never find a method missing: SQLite requires every file method of version 1.
pub(crate) fn register() -> bool {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    *REGISTERED.get_or_init(|| unsafe {
        let base = ffi::sqlite3_vfs_find(std::ptr::null());
        if base.is_null() {
            return false;
        }
        let b = &*base;
        let complete = b.iVersion >= 2
            && b.xOpen.is_some()
            && b.xDelete.is_some()
            && b.xAccess.is_some()
            && b.xFullPathname.is_some()
            && b.xDlOpen.is_some()
            && b.xDlError.is_some()
            && b.xDlSym.is_some()
            && b.xDlClose.is_some()
            && b.xRandomness.is_some()
            && b.xSleep.is_some()
            && b.xCurrentTime.is_some()
            && b.xGetLastError.is_some()
            && b.xCurrentTimeInt64.is_some();
        if !complete {
            return false;
        }
        let vfs = Box::leak(Box::new(ffi::sqlite3_vfs {
            iVersion: 2,
            szOsFile: (inner_offset() + (*base).szOsFile as usize) as c_int,
            mxPathname: (*base).mxPathname,
            pNext: std::ptr::null_mut(),
            zName: NAME.as_ptr(),
            pAppData: base.cast(),
            xOpen: Some(open),
            xDelete: Some(delete),
            xAccess: Some(access),
            xFullPathname: Some(full_pathname),
            xDlOpen: Some(dl_open),
            xDlError: Some(dl_error),
            xDlSym: Some(dl_sym),
            xDlClose: Some(dl_close),
            xRandomness: Some(randomness),
            xSleep: Some(sleep),
            xCurrentTime: Some(current_time),
            xGetLastError: Some(get_last_error),
            xCurrentTimeInt64: Some(current_time_int64),
            xSetSystemCall: None,
            xGetSystemCall: None,
            xNextSystemCall: None,
        }));
        ffi::sqlite3_vfs_register(vfs, 0) == ffi::SQLITE_OK
    })
}

/// An open file: ours first, the platform VFS's after it (SQLite allocates `szOsFile` bytes).
#[repr(C)]
struct File {
    base: ffi::sqlite3_file,
    /// A descriptor of our own on the main database, for reads that must not wait; -1 when
    /// there is none (then such reads are refused).
    fd: c_int,
}

fn inner_offset() -> usize {
    std::mem::size_of::<File>().next_multiple_of(16)
}

unsafe fn inner(file: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
    unsafe { file.cast::<u8>().add(inner_offset()).cast() }
}

unsafe fn base_vfs(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    unsafe { (*vfs).pAppData.cast() }
}

unsafe fn inner_methods(file: *mut ffi::sqlite3_file) -> &'static ffi::sqlite3_io_methods {
    unsafe { &*(*inner(file)).pMethods }
}

unsafe extern "C" fn open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    unsafe {
        let base = base_vfs(vfs);
        // Nothing to close unless the platform's open succeeds.
        (*file).pMethods = std::ptr::null();
        let rc = ((*base).xOpen.expect("xOpen"))(base, name, inner(file), flags, out_flags);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let ours = file.cast::<File>();
        // The path names the file the platform just opened: `Store::open` checks that it
        // named the same file before and after opening its connections.
        (*ours).fd = if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 && !name.is_null() {
            libc::open(name, libc::O_RDONLY | libc::O_CLOEXEC)
        } else {
            -1
        };
        (*file).pMethods = &METHODS;
        ffi::SQLITE_OK
    }
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    // Version 1: no shared memory (the index is immutable) and no memory map.
    iVersion: 1,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let fd = (*file.cast::<File>()).fd;
        if fd >= 0 {
            libc::close(fd);
        }
        (inner_methods(file).xClose.expect("xClose"))(inner(file))
    }
}

unsafe extern "C" fn read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    let Some(left) = BUDGET.get() else {
        return unsafe {
            (inner_methods(file).xRead.expect("xRead"))(inner(file), buf, amount, offset)
        };
    };
    let fd = unsafe { (*file.cast::<File>()).fd };
    let wanted = amount.max(0) as usize;
    if fd >= 0 && wanted <= left && unsafe { read_cached(fd, buf, wanted, offset) } {
        BUDGET.set(Some(left - wanted));
        return ffi::SQLITE_OK;
    }
    REFUSED.set(true);
    ffi::SQLITE_IOERR_READ
}

/// Reads `len` bytes at `offset` if all of them are in the page cache, without waiting. A
/// short count (part of the range not cached, or the end of the file) counts as not cached:
/// the blocking retry reads it the platform's way.
#[cfg(target_os = "linux")]
unsafe fn read_cached(fd: c_int, buf: *mut c_void, len: usize, offset: i64) -> bool {
    let iov = libc::iovec {
        iov_base: buf,
        iov_len: len,
    };
    let n = unsafe { libc::preadv2(fd, &iov, 1, offset, libc::RWF_NOWAIT) };
    usize::try_from(n) == Ok(len)
}

/// Elsewhere there is no read that refuses to wait: every lookup goes to a blocking thread.
#[cfg(not(target_os = "linux"))]
unsafe fn read_cached(_: c_int, _: *mut c_void, _: usize, _: i64) -> bool {
    false
}

/// Forwards a method to the platform VFS's file.
macro_rules! forward {
    ($name:ident, $method:ident $(, $arg:ident: $ty:ty)*) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            unsafe { (inner_methods(file).$method.expect(stringify!($method)))(inner(file) $(, $arg)*) }
        }
    };
}

forward!(write, xWrite, buf: *const c_void, amount: c_int, offset: ffi::sqlite3_int64);
forward!(truncate, xTruncate, size: ffi::sqlite3_int64);
forward!(sync, xSync, flags: c_int);
forward!(file_size, xFileSize, size: *mut ffi::sqlite3_int64);
forward!(lock, xLock, level: c_int);
forward!(unlock, xUnlock, level: c_int);
forward!(check_reserved_lock, xCheckReservedLock, out: *mut c_int);
forward!(file_control, xFileControl, op: c_int, arg: *mut c_void);
forward!(sector_size, xSectorSize);
forward!(device_characteristics, xDeviceCharacteristics);

/// Forwards a VFS method to the platform VFS.
macro_rules! forward_vfs {
    ($name:ident, $method:ident -> $ret:ty $(, $arg:ident: $ty:ty)*) => {
        unsafe extern "C" fn $name(vfs: *mut ffi::sqlite3_vfs $(, $arg: $ty)*) -> $ret {
            unsafe {
                let base = base_vfs(vfs);
                ((*base).$method.expect(stringify!($method)))(base $(, $arg)*)
            }
        }
    };
}

forward_vfs!(delete, xDelete -> c_int, name: *const c_char, sync: c_int);
forward_vfs!(access, xAccess -> c_int, name: *const c_char, flags: c_int, out: *mut c_int);
forward_vfs!(full_pathname, xFullPathname -> c_int, name: *const c_char, n: c_int, out: *mut c_char);
forward_vfs!(dl_open, xDlOpen -> *mut c_void, name: *const c_char);
forward_vfs!(dl_error, xDlError -> (), n: c_int, out: *mut c_char);
forward_vfs!(dl_close, xDlClose -> (), handle: *mut c_void);
forward_vfs!(randomness, xRandomness -> c_int, n: c_int, out: *mut c_char);
forward_vfs!(sleep, xSleep -> c_int, micros: c_int);
forward_vfs!(current_time, xCurrentTime -> c_int, out: *mut f64);
forward_vfs!(get_last_error, xGetLastError -> c_int, n: c_int, out: *mut c_char);
forward_vfs!(current_time_int64, xCurrentTimeInt64 -> c_int, out: *mut ffi::sqlite3_int64);

#[allow(clippy::type_complexity)]
unsafe extern "C" fn dl_sym(
    vfs: *mut ffi::sqlite3_vfs,
    handle: *mut c_void,
    symbol: *const c_char,
) -> Option<unsafe extern "C" fn(*mut ffi::sqlite3_vfs, *mut c_void, *const c_char)> {
    unsafe {
        let base = base_vfs(vfs);
        ((*base).xDlSym.expect("xDlSym"))(base, handle, symbol)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use crate::cache::{CacheOptions, open_or_build};
    use crate::ingest::Input;
    use crate::{QueryError, Store, query};
    use catalog::file::ReadLimits;
    use std::path::Path;

    /// A catalog of one bundle whose answer is about `bytes` long (a description that long in
    /// its `olm.csv.metadata`, served as its CSV).
    fn catalog(dir: &Path, bytes: usize) {
        let description = "x".repeat(bytes);
        let text = format!(
            r#"{{"schema":"olm.package","name":"big","defaultChannel":"stable"}}
{{"schema":"olm.channel","name":"stable","package":"big","entries":[{{"name":"big.v1.0.0"}}]}}
{{"schema":"olm.bundle","name":"big.v1.0.0","package":"big","image":"quay.io/example/big:v1","properties":[{{"type":"olm.package","value":{{"packageName":"big","version":"1.0.0"}}}},{{"type":"olm.csv.metadata","value":{{"description":"{description}"}}}}]}}
"#
        );
        std::fs::create_dir_all(dir.join("big")).unwrap();
        std::fs::write(dir.join("big/catalog.json"), text).unwrap();
    }

    fn index(catalog: &Path, cache: &Path) -> Store {
        let unfinished = unfinished::Unfinished::new();
        open_or_build(&CacheOptions {
            catalog: Input::Dir(catalog, ReadLimits::default()),
            cache_dir: Some(cache),
            enforce_integrity: false,
            require_cache: true,
            catalogd_content: false,
            unfinished: &unfinished,
        })
        .unwrap()
        .store
    }

    fn bundle(store: &Store, budget: usize) -> Option<Result<bytes::Bytes, QueryError>> {
        store.try_cached(budget, |c| {
            query::get_bundle(c, "big", "stable", "big.v1.0.0")
        })
    }

    #[test]
    fn a_lookup_within_budget_is_answered_and_one_over_it_is_refused_harmlessly() {
        let dir = tempfile::tempdir().unwrap();
        catalog(&dir.path().join("fbc"), 300 << 10);
        let store = index(&dir.path().join("fbc"), &dir.path().join("cache"));
        let expected = store
            .with_conn(|c| query::get_bundle(c, "big", "stable", "big.v1.0.0"))
            .unwrap();
        assert!(expected.len() > 300 << 10, "{}", expected.len());
        // Just built, so the whole file is in the page cache.
        assert_eq!(bundle(&store, 1 << 20).unwrap().unwrap(), expected);
        // Reading the 300 KiB bundle needs more than 64 KiB.
        assert!(bundle(&store, 64 << 10).is_none());
        // The refused read left every connection as it was.
        for _ in 0..crate::MAX_CONNECTIONS {
            assert_eq!(bundle(&store, 1 << 20).unwrap().unwrap(), expected);
        }
        let missing = store.try_cached(1 << 20, |c| query::get_bundle(c, "big", "stable", "nope"));
        assert_eq!(
            match missing {
                Some(Err(QueryError::NotFound(m))) => m,
                other => panic!("{other:?}"),
            },
            r#"package "big", channel "stable", bundle "nope" not found"#
        );
        // Outside `try_cached`, reads are not limited.
        assert_eq!(
            store
                .with_conn(|c| query::get_bundle(c, "big", "stable", "big.v1.0.0"))
                .unwrap(),
            expected
        );
    }

    /// Whether the first page of `path` is in the page cache.
    fn cached(path: &Path) -> bool {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open(path).unwrap();
        let mut buf = [0u8; 4096];
        let iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, 0, libc::RWF_NOWAIT) == 4096 }
    }

    #[test]
    fn a_lookup_that_would_wait_for_the_disk_is_refused() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        catalog(&dir.path().join("fbc"), 100 << 10);
        let cache = dir.path().join("cache");
        drop(index(&dir.path().join("fbc"), &cache));
        let path = crate::cache::index_path(&cache);
        let file = std::fs::File::open(&path).unwrap();
        file.sync_all().unwrap();
        let evict = || unsafe {
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        };
        let store = Store::open(&path).unwrap();
        evict();
        if cached(&path) {
            // A file system that keeps files in memory (tmpfs): nothing ever waits there.
            eprintln!("{} stays in memory; nothing to test here", path.display());
            return;
        }
        assert!(bundle(&store, 1 << 20).is_none());
        // A blocking read brings it in; then it is answered from memory.
        let expected = store
            .with_conn(|c| query::get_bundle(c, "big", "stable", "big.v1.0.0"))
            .unwrap();
        assert_eq!(bundle(&store, 1 << 20).unwrap().unwrap(), expected);
    }
}
