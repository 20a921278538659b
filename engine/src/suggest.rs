//! "Did you mean …?" candidates by edit distance.

/// The candidates close enough to `word` to be a likely typo, closest first (at most three).
///
/// Two kinds of near miss are certain and answered alone: a candidate that differs from `word`
/// only in letter case (`std/Review` → `std/review`), and one that is `word` with a `…/` prefix
/// added or removed (`std/run` → `run`, `review` → `std/review`). Otherwise candidates are ranked
/// by Jaro-Winkler similarity.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let candidates: Vec<&str> = candidates.into_iter().filter(|c| *c != word).collect();
    for same in [
        |w: &str, c: &str| w.eq_ignore_ascii_case(c),
        |w: &str, c: &str| {
            let tail = last_segment(w);
            !tail.is_empty() && tail.eq_ignore_ascii_case(last_segment(c))
        },
    ] {
        let mut exact: Vec<&str> = candidates
            .iter()
            .copied()
            .filter(|c| same(word, c))
            .collect();
        exact.sort_unstable();
        exact.dedup();
        if !exact.is_empty() {
            return exact.into_iter().take(3).map(str::to_string).collect();
        }
    }
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(score, c)| *score >= 0.8 || c.contains(word) && word.len() >= 3)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(3)
        .map(|(_, c)| c.to_string())
        .collect()
}

/// What follows the last `/` (all of `word` when it has none).
fn last_segment(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// `did you mean \`a\`?` or `did you mean one of \`a\`, \`b\`?`, or None.
pub fn help_text(candidates: &[String]) -> Option<String> {
    match candidates {
        [] => None,
        [one] => Some(format!("did you mean `{one}`?")),
        many => {
            let list: Vec<String> = many.iter().map(|c| format!("`{c}`")).collect();
            Some(format!("did you mean one of {}?", list.join(", ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [&str; 7] = [
        "std/gather",
        "std/restore",
        "std/review",
        "std/scan",
        "std/seal",
        "std/post",
        "run",
    ];

    #[test]
    fn close_words_are_suggested() {
        assert_eq!(
            did_you_mean("restor", ["restore", "review", "seal"]),
            ["restore"]
        );
        assert!(did_you_mean("xyz", ["restore", "review"]).is_empty());
    }

    #[test]
    fn a_case_only_difference_suggests_exactly_that_candidate() {
        assert_eq!(did_you_mean("std/Review", KINDS), ["std/review"]);
        assert_eq!(did_you_mean("RUN", KINDS), ["run"]);
    }

    #[test]
    fn a_namespace_added_or_missing_suggests_the_kind() {
        assert_eq!(did_you_mean("std/run", KINDS), ["run"]);
        assert_eq!(did_you_mean("review", KINDS), ["std/review"]);
        assert_eq!(did_you_mean("std/Run", KINDS), ["run"]);
    }

    #[test]
    fn typos_are_still_ranked() {
        assert_eq!(did_you_mean("std/reveiw", KINDS)[0], "std/review");
    }
}
