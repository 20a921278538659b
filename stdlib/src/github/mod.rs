//! The GitHub REST client that the `github` forge and the `github-artifacts` store share.
