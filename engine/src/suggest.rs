//! "Did you mean …?" candidates by edit distance.

/// The candidates close enough to `word` to be a likely typo, closest first (at most three).
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .filter(|c| *c != word)
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

    #[test]
    fn close_words_are_suggested() {
        assert_eq!(
            did_you_mean("restor", ["restore", "review", "seal"]),
            ["restore"]
        );
        assert!(did_you_mean("xyz", ["restore", "review"]).is_empty());
    }
}
