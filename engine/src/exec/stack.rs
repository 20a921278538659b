//! [`Stack`]: the stack a process started with `clone` runs on when it shares the engine's
//! memory (`CLONE_VM`): a stage's child until its `execve` (`process/spawn.rs`), the builder of
//! namespaces and the init of a stage's PID namespace (`confine/builder.rs`).

use std::ffi::c_void;
use std::io;

/// An anonymous mapping with a guard page at its lowest address (an overflow faults instead of
/// writing into the engine's memory), unmapped on drop.
///
/// Drop it only once nothing runs on it any more: the process using it has exec'd or exited
/// (`CLONE_VFORK` returns only then), or has been reaped. Where that cannot be known, forget it.
#[derive(Debug)]
pub(crate) struct Stack {
    base: *mut c_void,
    size: usize,
}

// SAFETY: the mapping is owned by the value alone; moving it to another thread moves nothing
// but the address.
unsafe impl Send for Stack {}
// SAFETY: `&Stack` gives only its addresses.
unsafe impl Sync for Stack {}

impl Stack {
    /// Maps `size` bytes (a multiple of the page size), the lowest page inaccessible.
    pub(crate) fn new(size: usize) -> io::Result<Self> {
        // SAFETY: an anonymous private mapping; no existing memory is touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Self { base, size };
        // SAFETY: the lowest page of the mapping just made.
        if unsafe { libc::mprotect(base, page_size(), libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// The lowest address of the mapping (guard page included), for `clone3`.
    pub(crate) fn base(&self) -> *mut c_void {
        self.base
    }

    /// The size of the mapping, for `clone3`.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Where the stack starts: it grows down from the end of the mapping (page aligned, so
    /// 16-byte aligned).
    pub(crate) fn top(&self) -> *mut c_void {
        self.base.wrapping_byte_add(self.size)
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; by the type's contract nothing runs on it.
        unsafe {
            libc::munmap(self.base, self.size);
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}
