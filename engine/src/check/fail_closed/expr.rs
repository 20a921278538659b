//! Conditions written for help texts: the `when` a finding suggests, built from the one the file
//! has, so that the suggestion keeps everything else the stage waits for.

use crate::model::{Expr, Reference};
use crate::span::Span;

/// `stage.output` as a condition.
pub fn reference(stage: &str, output: &str) -> Expr {
    Expr::Ref {
        reference: Reference {
            stage: stage.into(),
            output: output.into(),
            span: Span::default(),
        },
    }
}

/// Whether `expr` reads an output of `stage`.
pub fn mentions(expr: &Expr, stage: &str) -> bool {
    let mut refs = Vec::new();
    expr.collect_references(&mut refs);
    refs.iter().any(|r| r.stage == stage)
}

/// `expr` without the terms that read `stage`: `!scan.clean && review.commented` and
/// `scan.clean || review.commented` both give `review.commented`. `None` when nothing is left.
pub fn without(expr: &Expr, stage: &str) -> Option<Expr> {
    match expr {
        Expr::Const { .. } => Some(expr.clone()),
        Expr::Ref { reference } => (reference.stage != stage).then(|| expr.clone()),
        Expr::Not { expr: inner } => without(inner, stage).map(|e| Expr::Not { expr: Box::new(e) }),
        Expr::And { left, right } | Expr::Or { left, right } => {
            match (without(left, stage), without(right, stage)) {
                (None, None) => None,
                (Some(e), None) | (None, Some(e)) => Some(e),
                (Some(l), Some(r)) => Some(match expr {
                    Expr::And { .. } => Expr::And {
                        left: Box::new(l),
                        right: Box::new(r),
                    },
                    _ => Expr::Or {
                        left: Box::new(l),
                        right: Box::new(r),
                    },
                }),
            }
        }
    }
}

/// The terms of a chain of `&&`, in order.
fn conjuncts(expr: &Expr, out: &mut Vec<Expr>) {
    match expr {
        Expr::And { left, right } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        Expr::Const { value: true } => {}
        other => out.push(other.clone()),
    }
}

/// `required && existing`, written without needless parentheses and without repeating a term:
/// `scan.clean && review.commented`.
pub fn conjunction(required: &[Expr], existing: Option<&Expr>) -> String {
    let mut terms: Vec<Expr> = Vec::new();
    for r in required {
        conjuncts(r, &mut terms);
    }
    if let Some(e) = existing {
        conjuncts(e, &mut terms);
    }
    let mut unique: Vec<Expr> = Vec::new();
    for t in terms {
        if !unique.iter().any(|u| same(u, &t)) {
            unique.push(t);
        }
    }
    let mut iter = unique.into_iter();
    let Some(first) = iter.next() else {
        return "true".into();
    };
    iter.fold(first, |acc, t| Expr::And {
        left: Box::new(acc),
        right: Box::new(t),
    })
    .to_string()
}

/// Equal as written, spans aside.
fn same(a: &Expr, b: &Expr) -> bool {
    a.to_string() == b.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::parse_expr;

    fn parse(text: &str) -> Expr {
        parse_expr(text, Span::new(0, text.len())).expect("a condition")
    }

    #[test]
    fn a_negated_or_alternative_guard_is_dropped_and_required() {
        for when in [
            "!scan.clean && review.commented",
            "scan.clean || review.commented",
            "review.commented",
        ] {
            let rest = without(&parse(when), "scan");
            let fix = conjunction(&[reference("scan", "clean")], rest.as_ref());
            assert_eq!(fix, "scan.clean && review.commented", "{when}");
        }
        assert_eq!(without(&parse("!scan.clean"), "scan"), None);
    }

    #[test]
    fn a_conjunction_keeps_the_other_terms_without_parentheses() {
        let when = parse("(a.x || b.y) && c.z");
        assert_eq!(
            conjunction(&[reference("g", "ok")], Some(&when)),
            "g.ok && (a.x || b.y) && c.z"
        );
        assert_eq!(
            conjunction(&[reference("c", "z")], Some(&when)),
            "c.z && (a.x || b.y)"
        );
        assert_eq!(conjunction(&[reference("g", "ok")], None), "g.ok");
    }
}
