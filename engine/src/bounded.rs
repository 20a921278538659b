//! Reading within a bound: what every layer that reads a file it did not write (the checkout,
//! a stage's folder, a kept run) uses, and the words its refusal is said in.

use std::fs::File;
use std::io::{self, Read as _};

/// A read past its bound (the caller names the file). The text is what users see.
pub fn too_large_error(limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("it is larger than {}", size_text(limit)),
    )
}

/// `8 MiB`, `1 KiB`, `100 bytes`.
pub fn size_text(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// Reads `file` to its end, refusing more than `limit` bytes (one byte past it is read to tell).
pub fn read_bounded(file: File, limit: u64) -> io::Result<Vec<u8>> {
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > limit {
        return Err(too_large_error(limit));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large_error(limit));
    }
    Ok(bytes)
}
