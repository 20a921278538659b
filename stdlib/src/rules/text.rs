//! Small text helpers the rules share.

/// The lower-cased extension of the file name in `path`, if any.
pub(crate) fn extension(path: &str) -> Option<String> {
    let name = path.rsplit('/').next()?;
    let (stem, ext) = name.rsplit_once('.')?;
    (!stem.is_empty()).then(|| ext.to_ascii_lowercase())
}

fn ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// True when `needle` occurs in `hay` as a token: not preceded by an identifier character or a
/// dot (`mydbg!(`, `x.console.log(`), and, when it ends in an identifier character, not followed
/// by one (`import pdbx`).
pub(crate) fn contains_token(hay: &[u8], needle: &[u8]) -> bool {
    if needle.is_empty() || hay.len() < needle.len() {
        return false;
    }
    let open_end = needle.last().is_some_and(|&b| ident(b));
    hay.windows(needle.len()).enumerate().any(|(i, w)| {
        w == needle
            && (i == 0 || !(ident(hay[i - 1]) || hay[i - 1] == b'.'))
            && !(open_end && hay.get(i + needle.len()).is_some_and(|&b| ident(b)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions() {
        assert_eq!(extension("src/a.RS").as_deref(), Some("rs"));
        assert_eq!(extension("a.tar.gz").as_deref(), Some("gz"));
        assert_eq!(extension(".bashrc"), None);
        assert_eq!(extension("dir.d/Makefile"), None);
    }

    #[test]
    fn tokens() {
        assert!(contains_token(b"  dbg!(x);", b"dbg!("));
        assert!(!contains_token(b"mydbg!(x)", b"dbg!("));
        assert!(contains_token(b"import pdb", b"import pdb"));
        assert!(!contains_token(b"import pdbx", b"import pdb"));
        assert!(!contains_token(b"foo.breakpoint()", b"breakpoint()"));
        assert!(!contains_token(b"", b"x"));
    }
}
