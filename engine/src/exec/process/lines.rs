//! Splits a byte stream into lines, with a cap on the length of a line.

/// Accumulates bytes and emits each complete line without its `\n`. A line longer than `max`
/// is emitted in pieces of `max` bytes, so a child that never writes a newline cannot make
/// memory grow without bound.
#[derive(Debug)]
pub(super) struct LineSplitter {
    partial: Vec<u8>,
    max: usize,
}

impl LineSplitter {
    pub(super) fn new(max: usize) -> Self {
        Self {
            partial: Vec::new(),
            max: max.max(1),
        }
    }

    pub(super) fn push(&mut self, mut data: &[u8], emit: &mut impl FnMut(Vec<u8>)) {
        while !data.is_empty() {
            let room = self.max - self.partial.len();
            match data.iter().take(room + 1).position(|&b| b == b'\n') {
                Some(at) => {
                    self.partial.extend_from_slice(&data[..at]);
                    emit(std::mem::take(&mut self.partial));
                    data = &data[at + 1..];
                }
                None => {
                    let take = room.min(data.len());
                    self.partial.extend_from_slice(&data[..take]);
                    data = &data[take..];
                    if self.partial.len() == self.max {
                        emit(std::mem::take(&mut self.partial));
                    }
                }
            }
        }
    }

    /// Emits a last line that had no newline.
    pub(super) fn finish(&mut self, emit: &mut impl FnMut(Vec<u8>)) {
        if !self.partial.is_empty() {
            emit(std::mem::take(&mut self.partial));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::LineSplitter;

    fn split(max: usize, chunks: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut s = LineSplitter::new(max);
        let mut out = Vec::new();
        for chunk in chunks {
            s.push(chunk, &mut |l| out.push(l));
        }
        s.finish(&mut |l| out.push(l));
        out
    }

    #[test]
    fn lines_across_chunks() {
        let out = split(100, &[b"ab", b"c\nde\n\nf"]);
        assert_eq!(out, [&b"abc"[..], b"de", b"", b"f"]);
    }

    #[test]
    fn long_lines_are_cut_at_the_cap() {
        let out = split(3, &[b"abcdefg\nhij\n"]);
        assert_eq!(out, [&b"abc"[..], b"def", b"g", b"hij"]);
    }
}
