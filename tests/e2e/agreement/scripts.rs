//! The programs of the generated stages, written into each checkout's `scripts/`.
//!
//! A spy assembles the canary's prefix at run time (no file holds it), then searches, with one
//! `grep` per place, for it raw, reversed, in hex and in base64, and prints `AGR-HIT <stage>
//! <path> <form>` per find: what it was given (its arguments, standard input, environment and
//! work folder: `given/` and `inputs/`), then everything it can reach (every process's environ,
//! cmdline and open files, the run's work root with the other stages' folders, the case's folder
//! with the checkout, its `.reviewflow`, the shared folder and the run's temp folder, HOME). The
//! lines go through the run's log, which redacts the canary itself but not these words.

/// `holder.sh NAME [SHARE]`: in the canary's scope. Leaves it, in every form, in its folder,
/// its outputs, beside its folder, in the checkout and in a shared folder when it can, and says
/// it raw and in base64 on its output (which the run must redact).
pub const HOLDER: &str = r#"#!/bin/sh
name="$1"
dir="${REVIEWFLOW_WORK_DIR:-.}"
c="$CANARY"
rev=$(printf '%s' "$c" | rev)
hex=$(printf '%s' "$c" | od -An -tx1 | tr -d ' \n')
b64=$(printf '%s' "$c" | base64 | tr -d '\n')
printf '%s\n%s\n%s\n%s\n' "$c" "$b64" "$hex" "$rev" > "$dir/all.txt"
printf '%s %s\n' "$rev" "$hex" > "$dir/o.txt"
printf '%s\n' "$rev" > "$dir/f.txt"
case "$hex" in *[02468ace]) echo true ;; *) echo false ;; esac > "$dir/b.txt"
[ -n "$2" ] && [ -d "$2" ] && { printf '%s\n' "$rev" > "$2/from-$name.txt"; } 2>/dev/null
{ printf '%s\n' "$rev" > "$dir/../dropped-$name.txt"; } 2>/dev/null
{ printf '%s\n' "$rev" > "./dropped-$name.txt"; } 2>/dev/null
{ printf '%s\n' "$rev" > "${HOME:-/nonexistent}/dropped-$name.txt"; } 2>/dev/null
echo "$name holds $c and $b64"
"#;

/// `spy.sh NAME ARGS…`: out of the canary's scope; looks everywhere, prints what it finds.
pub const SPY: &str = r#"#!/bin/sh
name="$1"; shift
own="${REVIEWFLOW_WORK_DIR:-${TMPDIR:-/nonexistent}}"
pre="zqk7""cana""ryx9"
rpre=$(printf '%s' "$pre" | rev)
hpre=$(printf '%s' "$pre" | od -An -tx1 | tr -d ' \n')
bpre=$(printf '%s' "$pre" | base64 | tr -d '\n')
given="$own/given"
mkdir -p "$given" 2>/dev/null
# The patterns in a file (never on a command line another spy could read), skipped by name.
pat="$given/agr-patterns"
printf '%s\n' "$pre" "$rpre" "$hpre" "$bpre" > "$pat"
printf '%s\n' "$@" > "$given/args" 2>/dev/null
cat > "$given/stdin" 2>/dev/null
env > "$given/env" 2>/dev/null
cat "$given/args" "$given/stdin" > "$own/out.txt" 2>/dev/null
echo "AGR-WORK $name $own"
form() {
    case "$1" in
        "$pre") echo raw ;; "$rpre") echo reversed ;; "$hpre") echo hex ;; "$bpre") echo base64 ;;
    esac
}
report() {
    sort -u | while IFS= read -r line; do
        m="${line##*:}"; p="${line%:*}"
        echo "AGR-HIT $name $p $(form "$m")"
    done
}
look() { # look PATH… : every file beneath; devices, FIFOs and sockets skipped
    timeout 20 grep -raoFH -D skip --exclude=agr-patterns -f "$pat" "$@" 2>/dev/null | report
}
look "$own"
look /proc/[0-9]*/environ /proc/[0-9]*/cmdline
timeout 20 grep -aoFH -D skip -d skip -f "$pat" /proc/[0-9]*/fd/* 2>/dev/null | report
look "${TMPDIR:-/nonexistent}/.." "$PWD/.." "${HOME:-/nonexistent}"
echo "AGR-DONE $name"
"#;

/// `reviewer.sh NAME …`: a `command` reviewer that spies as `spy.sh` does, then answers; in the
/// canary's scope (CANARY set) it also puts the canary, reversed, into its comment and its
/// conversation, as a prompt-injected reviewer would.
pub const REVIEWER: &str = r#"#!/bin/sh
name="$1"
own=$(dirname "$REVIEWFLOW_RESULT")
REVIEWFLOW_WORK_DIR="$own" sh "$(dirname "$0")/spy.sh" "$@" </dev/null
said="spy review"
[ -n "$CANARY" ] && said="spy review $(printf '%s' "$CANARY" | rev)"
printf '%s\n' "$said" > "$REVIEWFLOW_CONVERSATION_OUT/session.txt"
resumed=false
[ -n "${REVIEWFLOW_RESUME:-}" ] && resumed=true
printf '{"version":1,"comment":"%s","findings":[],"conversation":"session.txt","resumed":%s}\n' \
    "$said" "$resumed" > "$REVIEWFLOW_RESULT"
"#;
