//! The seven principles every check applies (docs/checks.md, "Principles"). Each check names the
//! one it applies, and its section of the docs says the same (a test keeps the two in step).

/// One of the principles, numbered as docs/checks.md numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Principle {
    UnknownIsUntrusted = 1,
    UnknownAuthority = 2,
    AllowLists = 3,
    Coverage = 4,
    Labels = 5,
    NarrowSuppressions = 6,
    OneSourceOfTruth = 7,
}

impl Principle {
    pub const ALL: [Self; 7] = [
        Self::UnknownIsUntrusted,
        Self::UnknownAuthority,
        Self::AllowLists,
        Self::Coverage,
        Self::Labels,
        Self::NarrowSuppressions,
        Self::OneSourceOfTruth,
    ];

    /// Its number in docs/checks.md.
    pub fn number(self) -> u8 {
        self as u8
    }

    /// Its name, as docs/checks.md and messages write it.
    pub fn name(self) -> &'static str {
        match self {
            Self::UnknownIsUntrusted => "unknown is untrusted",
            Self::UnknownAuthority => "unknown authority can do anything its kind can",
            Self::AllowLists => "allow-lists, not deny-lists",
            Self::Coverage => "coverage is a promise",
            Self::Labels => "labels never vanish silently",
            Self::NarrowSuppressions => "suppressions are narrow",
            Self::OneSourceOfTruth => "check and run have one source of truth",
        }
    }
}

impl std::fmt::Display for Principle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, {}", self.number(), self.name())
    }
}
