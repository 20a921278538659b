//! The `github` forge: what `std/post` writes to a pull request (the review comment and its
//! metadata marker, the check run, inline comments), as pure functions over GitHub's limits.
