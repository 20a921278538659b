//! What an input's `type` and `pattern` let a value from outside the file hold (principle 1:
//! an input read from the environment is attacker text up to what its declaration excludes).
//!
//! The pattern is read as an automaton, not tried against a list: a lazy DFA of the pattern
//! (with `regex`'s own search semantics: a value is admitted when the pattern matches anywhere in
//! it) is explored over an alphabet of every ASCII character and a few characters beyond it, and
//! the exploration says which characters an admitted value may hold, which it may start with,
//! and gives one admitted value for each (the shortest), the shortest admitted value, and a long
//! one where the pattern admits any length. Values nobody thought to list are found this way:
//! `check` tries `run`'s refusals on them (`run-refusal`), and an input whose values can hold more
//! than a name is labelled untrusted (`flow`).
//!
//! Most patterns are a chain: anchored at the start, then characters each from a set, all but
//! the last a fixed number of times (`^[a-z0-9][a-z0-9-]{0,63}$`). Such a pattern is read from
//! its syntax tree: after `k` characters it can only be at its `k`-th step, so what it admits is
//! worked out along the steps, with the same answer the exploration gives (determinising the
//! lazy DFA of `{0,63}` cost more than the rest of `check` did). Any other pattern (an
//! alternation of words, two repetitions in a row, no `^`) goes through the lazy DFA; tests
//! compare the two on the patterns the chain reads.
//!
//! A pattern the exploration cannot finish (too many states, a construct the lazy DFA gives up
//! on) is taken to admit anything: unknown is untrusted.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use regex_automata::hybrid::LazyStateID;
use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::util::start;
use regex_automata::{Anchored, nfa::thompson};
use regex_syntax::hir::{Class, Hir, HirKind, Look};

use crate::model::{Input, InputType};

/// Characters beyond ASCII that the exploration tries: a Latin letter, a bidi control, an
/// ideographic space, a byte-order mark and an emoji (four bytes).
const BEYOND_ASCII: &[char] = &['\u{e9}', '\u{202e}', '\u{3000}', '\u{feff}', '\u{1f600}'];

/// States explored at most; a pattern with more is taken to admit anything.
const MAX_STATES: usize = 4096;

/// Length of the long value tried when the pattern admits values of any length.
const LONG: usize = 256;

/// What one input admits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Admits {
    /// Every character of the alphabet some admitted value holds.
    pub anywhere: BTreeSet<char>,
    /// Every character of the alphabet some admitted value starts with.
    pub first: BTreeSet<char>,
    /// Admitted values, each the shortest of its kind (holding a character, starting with one,
    /// the shortest of all, a long one), without repeats.
    pub witnesses: Vec<String>,
    /// The exploration did not finish: anything may be admitted.
    pub unknown: bool,
}

/// The characters the exploration walks with.
fn alphabet() -> Vec<char> {
    (0u8..=0x7f)
        .map(char::from)
        .chain(BEYOND_ASCII.iter().copied())
        .collect()
}

/// The characters a name is made of: a value of only these, starting with a letter or digit,
/// cannot name an option, a path above or beside it, a second word or a command.
pub fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

impl Admits {
    /// Whether every admitted value is a name ([`name_char`], starting with a letter or digit),
    /// so it can steer nothing it is put into.
    pub fn only_names(&self) -> bool {
        !self.unknown
            && self.anywhere.iter().all(|&c| name_char(c))
            && self.first.iter().all(|c| c.is_ascii_alphanumeric())
    }

    /// Anything at all: every character anywhere and first, one value per character.
    fn anything() -> Self {
        let all: BTreeSet<char> = alphabet().into_iter().collect();
        let mut witnesses: Vec<String> = all.iter().map(|c| c.to_string()).collect();
        witnesses.push(String::new());
        witnesses.push("x".repeat(LONG));
        Self {
            anywhere: all.clone(),
            first: all,
            witnesses,
            unknown: true,
        }
    }
}

/// What `input` admits: by its type first (an `int`, a `bool`, a `sha` hold digits, the two
/// words, hex), then by its pattern. Cached per pattern for the process, and shared: the flow
/// and the checks ask about the same input.
pub fn admits(input: &Input) -> Arc<Admits> {
    let typed: Option<&[char]> = match input.ty.value {
        InputType::String => None,
        InputType::Int => Some(&['-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']),
        InputType::Bool => Some(&['t', 'r', 'u', 'e', 'f', 'a', 'l', 's']),
        InputType::Sha => Some(&[
            '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b', 'c', 'd', 'e', 'f', 'A',
            'B', 'C', 'D', 'E', 'F',
        ]),
    };
    let pattern = match &input.pattern {
        None => Arc::new(Admits::anything()),
        Some(p) => of_pattern(&p.value),
    };
    let Some(chars) = typed else {
        return pattern;
    };
    // The type is checked before the pattern: a value holds only what both admit.
    let mut out = Arc::unwrap_or_clone(pattern);
    out.unknown = false;
    out.anywhere.retain(|c| chars.contains(c));
    out.first.retain(|c| chars.contains(c));
    if input.ty.value != InputType::Int {
        out.first.remove(&'-');
    }
    Arc::new(out)
}

/// What `pattern` admits, from a cache of the process (like `inputs::regex`).
pub fn of_pattern(pattern: &str) -> Arc<Admits> {
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Admits>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(a) = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(pattern)
    {
        return Arc::clone(a);
    }
    let admits = Arc::new(explore(pattern).unwrap_or_else(Admits::anything));
    let mut map = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if map.len() < CACHED {
        map.insert(pattern.to_owned(), Arc::clone(&admits));
    }
    admits
}

/// Patterns [`of_pattern`] keeps.
const CACHED: usize = 64;

/// A node of the exploration: a state of the lazy DFA, or "a match was already seen" (with
/// search semantics, whatever follows a match is admitted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Node {
    State(LazyStateID),
    Matched,
}

struct Graph {
    /// The alphabet in units: the characters each leads alike from every state (the ASCII
    /// characters of one byte class of the DFA, or one character beyond ASCII), in the order
    /// of their smallest character, each unit's characters in order.
    units: Vec<Vec<char>>,
    /// Edges, node after node (numbered in the order a breadth-first walk from the start in
    /// unit order meets them, node 0 the start), each node's in unit order: (unit, target).
    /// One list for all, not one per node: a node's are `edges[starts[n]..starts[n + 1]]`.
    edges: Vec<(usize, usize)>,
    starts: Vec<usize>,
    accepting: Vec<bool>,
}

impl Graph {
    /// The character a path through unit `u` is written with: its smallest.
    fn rep(&self, u: usize) -> char {
        self.units[u][0]
    }

    fn len(&self) -> usize {
        self.accepting.len()
    }

    /// The edges from node `n`.
    fn from(&self, n: usize) -> &[(usize, usize)] {
        &self.edges[self.starts[n]..self.starts[n + 1]]
    }
}

/// The alphabet's units for `dfa` (see [`Graph::units`]).
fn units(dfa: &DFA) -> Vec<Vec<char>> {
    let classes = dfa.byte_classes();
    let mut by_class: [Option<usize>; 256] = [None; 256];
    let mut units: Vec<Vec<char>> = Vec::new();
    for b in 0u8..=0x7f {
        let class = usize::from(classes.get(b));
        let u = *by_class[class].get_or_insert_with(|| {
            units.push(Vec::new());
            units.len() - 1
        });
        units[u].push(char::from(b));
    }
    units.extend(BEYOND_ASCII.iter().map(|&c| vec![c]));
    units
}

/// A set of the alphabet's characters: the ASCII ones by code, then [`BEYOND_ASCII`] by index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Chars {
    ascii: u128,
    beyond: u8,
}

impl Chars {
    fn of_char(c: char) -> Self {
        let mut out = Self::default();
        if c.is_ascii() {
            out.ascii = 1 << u32::from(c);
        } else if let Some(i) = BEYOND_ASCII.iter().position(|&b| b == c) {
            out.beyond = 1 << i;
        }
        out
    }

    /// The alphabet's characters in `class`; `None` for a class of bytes beyond ASCII, which
    /// can match part of a character (the lazy DFA reads those).
    fn of_class(class: &Class) -> Option<Self> {
        let mut out = Self::default();
        let mut ascii = |lo: u32, hi: u32| {
            if lo <= 0x7f {
                let hi = hi.min(0x7f);
                // Bits lo..=hi; a shift by 128 would overflow, so the top is built from below.
                let upto = if hi == 0x7f {
                    u128::MAX
                } else {
                    (1u128 << (hi + 1)) - 1
                };
                out.ascii |= upto & !((1u128 << lo) - 1);
            }
        };
        match class {
            Class::Unicode(u) => {
                for r in u.ranges() {
                    ascii(u32::from(r.start()), u32::from(r.end()));
                }
                for (i, &c) in BEYOND_ASCII.iter().enumerate() {
                    if u.ranges().iter().any(|r| r.start() <= c && c <= r.end()) {
                        out.beyond |= 1 << i;
                    }
                }
            }
            Class::Bytes(b) => {
                for r in b.ranges() {
                    if r.end() > 0x7f {
                        return None;
                    }
                    ascii(u32::from(r.start()), u32::from(r.end()));
                }
            }
        }
        Some(out)
    }

    #[cfg(test)]
    fn contains(self, c: char) -> bool {
        if c.is_ascii() {
            self.ascii >> u32::from(c) & 1 == 1
        } else {
            BEYOND_ASCII
                .iter()
                .position(|&b| b == c)
                .is_some_and(|i| self.beyond >> i & 1 == 1)
        }
    }

    fn is_empty(self) -> bool {
        self == Self::default()
    }

    fn all() -> Self {
        Self {
            ascii: u128::MAX,
            beyond: u8::MAX >> (8 - BEYOND_ASCII.len()),
        }
    }

    fn and(self, other: Self) -> Self {
        Self {
            ascii: self.ascii & other.ascii,
            beyond: self.beyond & other.beyond,
        }
    }

    fn without(self, other: Self) -> Self {
        Self {
            ascii: self.ascii & !other.ascii,
            beyond: self.beyond & !other.beyond,
        }
    }

    /// The characters, in order (a set bit at a time: a chain has a set per step).
    fn chars(self) -> impl Iterator<Item = char> {
        let mut ascii = self.ascii;
        std::iter::from_fn(move || {
            let b = u8::try_from(ascii.trailing_zeros())
                .ok()
                .filter(|&b| b <= 0x7f)?;
            ascii &= ascii - 1;
            Some(char::from(b))
        })
        .chain(
            BEYOND_ASCII
                .iter()
                .enumerate()
                .filter(move |&(i, _)| self.beyond >> i & 1 == 1)
                .map(|(_, &c)| c),
        )
    }
}

/// One piece of a chain pattern: a character from `chars`, `min` to `max` times.
struct Piece {
    chars: Chars,
    min: u32,
    max: Option<u32>,
}

/// A pattern whose automaton is a chain, read from its syntax tree: `^`, then pieces each a
/// set of characters repeated, all but the last a fixed number of times, then `$` or not.
/// After `k` characters the automaton can only be at the `k`-th step, so it has one state per
/// step, and it is the automaton the lazy DFA would build (tests compare the two).
#[derive(Debug)]
struct Chain {
    /// The characters admitted at each step, in order.
    steps: Vec<Chars>,
    /// Steps taken before a value may end.
    least: usize,
    /// The last piece's characters, when it repeats without bound: the last state loops.
    more: Option<Chars>,
    /// The pattern ends with `$`; without it anything may follow a match.
    ended: bool,
}

impl Chain {
    /// The chain `pattern` is, or `None` when it is not one (or is no pattern, or is longer
    /// than [`MAX_STATES`]).
    fn read(pattern: &str) -> Option<Self> {
        let hir = regex_automata::util::syntax::parse(pattern).ok()?;
        let items = match hir.kind() {
            HirKind::Concat(items) => items.as_slice(),
            _ => std::slice::from_ref(&hir),
        };
        let (first, mut rest) = items.split_first()?;
        if !matches!(first.kind(), HirKind::Look(Look::Start)) {
            return None;
        }
        let ended = matches!(rest.last().map(Hir::kind), Some(HirKind::Look(Look::End)));
        if ended {
            rest = &rest[..rest.len() - 1];
        }
        let mut pieces = Vec::new();
        for item in rest {
            read_pieces(item, &mut pieces)?;
        }
        let mut steps: Vec<Chars> = Vec::new();
        let push = |steps: &mut Vec<Chars>, chars: Chars, times: u32| -> Option<()> {
            let times = usize::try_from(times).ok()?;
            if steps.len().checked_add(times)? > MAX_STATES {
                return None;
            }
            steps.extend(std::iter::repeat_n(chars, times));
            Some(())
        };
        let (mut least, mut more) = (0, None);
        if let Some((last, fixed)) = pieces.split_last() {
            for p in fixed {
                // A piece of varying count before another: after `k` characters the
                // automaton may be in either, which is no chain.
                if p.max != Some(p.min) {
                    return None;
                }
                push(&mut steps, p.chars, p.min)?;
            }
            push(&mut steps, last.chars, last.min)?;
            least = steps.len();
            match last.max {
                Some(max) => push(&mut steps, last.chars, max.checked_sub(last.min)?)?,
                None => more = Some(last.chars),
            }
        }
        if !ended {
            // Search semantics: a value that reaches a match is admitted whatever follows.
            steps.truncate(least);
            more = None;
        }
        if let (true, Some(chars)) = (steps.is_empty(), more) {
            // No character leads back to the lazy DFA's start state (it alone has seen the
            // start of the text): a loop from the start is a step to a state that loops.
            steps.push(chars);
        }
        if let Some(k) = steps.iter().position(|s| s.is_empty()) {
            // No character leads past step `k`: the states after it are never reached.
            steps.truncate(k);
            more = None;
        }
        Some(Self {
            steps,
            least,
            more,
            ended,
        })
    }

    /// What the chain admits: what [`summarise`] finds on [`Chain::graph`], worked out along
    /// the chain instead of walked (tests compare the two, and both with the lazy DFA's). A
    /// value is written with the least character of each step but one: the shortest way
    /// through a character is through the first step that holds it, or else round the last
    /// state's loop, or else (without `$`) past the match.
    fn admits(&self) -> Admits {
        let last = self.steps.len();
        if last < self.least {
            // A step no character passes comes before any value could end: nothing is admitted.
            return Admits::default();
        }
        let least: Vec<char> = self.steps.iter().filter_map(|s| s.chars().next()).collect();
        let word = |to: usize, middle: Option<char>, then: std::ops::Range<usize>| -> String {
            let mut out: String = least[..to].iter().collect();
            out.extend(middle);
            out.extend(&least[then]);
            out
        };
        let mut values: Vec<(char, String)> = Vec::new();
        let mut unseen = Chars::all();
        for (k, &step) in self.steps.iter().enumerate() {
            if unseen.is_empty() {
                break;
            }
            let new = step.and(unseen);
            if new.is_empty() {
                continue;
            }
            for c in new.chars() {
                values.push((c, word(k, Some(c), k + 1..(k + 1).max(self.least))));
            }
            unseen = unseen.without(step);
        }
        let beyond = match self.more {
            Some(more) => more,
            None if !self.ended => Chars::all(),
            None => Chars::default(),
        };
        for c in unseen.and(beyond).chars() {
            values.push((c, word(last, Some(c), last..last)));
        }
        values.sort_unstable_by_key(|&(c, _)| c);
        let mut admits = Admits {
            anywhere: values.iter().map(|&(c, _)| c).collect(),
            first: match self.steps.first() {
                Some(step) => step.chars().collect(),
                None if !self.ended => Chars::all().chars().collect(),
                None => BTreeSet::new(),
            },
            witnesses: Vec::with_capacity(values.len() + 2),
            unknown: false,
        };
        let mut push = |w: String| {
            if !admits.witnesses.contains(&w) {
                admits.witnesses.push(w);
            }
        };
        push(word(self.least, None, 0..0));
        for (_, v) in values {
            push(v);
        }
        let long = match self.more.and_then(|m| m.chars().next()) {
            Some(c) => Some(word(last, None, 0..0) + &c.to_string().repeat(LONG)),
            // Past a match, every character leads on; the least is NUL.
            None if !self.ended => Some(word(last, None, 0..0) + &"\0".repeat(LONG + 1)),
            None => None,
        };
        if let Some(long) = long {
            push(long);
        }
        admits
    }

    /// The alphabet in units (see [`Graph::units`]): ASCII characters split by every set of
    /// the chain until each unit lies inside or outside of each, then [`BEYOND_ASCII`] one by
    /// one.
    #[cfg(test)]
    fn units(&self) -> Vec<Vec<char>> {
        let mut sets: Vec<u128> = self
            .steps
            .iter()
            .chain(self.more.iter())
            .map(|c| c.ascii)
            .collect();
        sets.sort_unstable();
        sets.dedup();
        let mut masks = vec![u128::MAX];
        for set in sets {
            masks = masks
                .into_iter()
                .flat_map(|m| [m & set, m & !set])
                .filter(|&m| m != 0)
                .collect();
        }
        // In the order of their smallest character, as the lazy DFA's units are.
        masks.sort_unstable_by_key(|m| m.trailing_zeros());
        let mut units: Vec<Vec<char>> = masks
            .into_iter()
            .map(|mut m| {
                let mut chars = Vec::new();
                while let Ok(b) = u8::try_from(m.trailing_zeros()) {
                    if b > 0x7f {
                        break;
                    }
                    chars.push(char::from(b));
                    m &= m - 1;
                }
                chars
            })
            .collect();
        units.extend(BEYOND_ASCII.iter().map(|&c| vec![c]));
        units
    }

    /// The chain as a graph numbered as [`build`] numbers the lazy DFA's: state `k` after `k`
    /// characters, then, without `$`, the node past a match.
    #[cfg(test)]
    fn graph(&self) -> Graph {
        let mut g = Graph {
            units: self.units(),
            edges: Vec::new(),
            starts: vec![0],
            accepting: Vec::with_capacity(self.steps.len() + 2),
        };
        let last = self.steps.len();
        let matched = !self.ended && last >= self.least;
        let on = |g: &mut Graph, chars: Option<Chars>, to: usize| {
            for u in 0..g.units.len() {
                if chars.is_none_or(|c| c.contains(g.rep(u))) {
                    g.edges.push((u, to));
                }
            }
            g.starts.push(g.edges.len());
        };
        for (k, &chars) in self.steps.iter().enumerate() {
            on(&mut g, Some(chars), k + 1);
            g.accepting.push(k >= self.least);
        }
        match self.more {
            Some(chars) => on(&mut g, Some(chars), last),
            None if matched => on(&mut g, None, last + 1),
            None => g.starts.push(g.edges.len()),
        }
        g.accepting.push(last >= self.least);
        if matched {
            on(&mut g, None, last + 1);
            g.accepting.push(true);
        }
        g
    }
}

/// Appends the pieces `hir` is made of; `None` when it is not a chain's.
fn read_pieces(hir: &Hir, out: &mut Vec<Piece>) -> Option<()> {
    match hir.kind() {
        HirKind::Empty => {}
        HirKind::Literal(lit) => {
            for c in std::str::from_utf8(&lit.0).ok()?.chars() {
                out.push(Piece {
                    chars: Chars::of_char(c),
                    min: 1,
                    max: Some(1),
                });
            }
        }
        HirKind::Class(class) => out.push(Piece {
            chars: Chars::of_class(class)?,
            min: 1,
            max: Some(1),
        }),
        HirKind::Capture(cap) => read_pieces(&cap.sub, out)?,
        HirKind::Concat(items) => {
            for item in items {
                read_pieces(item, out)?;
            }
        }
        HirKind::Repetition(rep) => out.push(Piece {
            chars: one_char(&rep.sub)?,
            min: rep.min,
            max: rep.max,
        }),
        HirKind::Look(_) | HirKind::Alternation(_) => return None,
    }
    Some(())
}

/// The characters `hir` matches when it matches exactly one.
fn one_char(hir: &Hir) -> Option<Chars> {
    match hir.kind() {
        HirKind::Class(class) => Chars::of_class(class),
        HirKind::Literal(lit) => {
            let mut chars = std::str::from_utf8(&lit.0).ok()?.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Some(Chars::of_char(c)),
                _ => None,
            }
        }
        HirKind::Capture(cap) => one_char(&cap.sub),
        _ => None,
    }
}

/// Explores the pattern's automaton; `None` when it cannot finish.
fn explore(pattern: &str) -> Option<Admits> {
    match Chain::read(pattern) {
        Some(chain) => Some(chain.admits()),
        None => explore_dfa(pattern),
    }
}

/// Explores the pattern's lazy DFA; `None` when it cannot finish.
fn explore_dfa(pattern: &str) -> Option<Admits> {
    let dfa = DFA::builder()
        .configure(
            DFA::config()
                .cache_capacity(4 << 20)
                .minimum_cache_clear_count(Some(0)),
        )
        .thompson(thompson::Config::new().nfa_size_limit(Some(1 << 20)))
        .build(pattern)
        .ok()?;
    let mut cache = dfa.create_cache();
    let graph = build(&dfa, &mut cache)?;
    // A cleared cache invalidates every state id seen: start again is not worth it.
    if cache.clear_count() != 0 {
        return None;
    }
    Some(summarise(&graph))
}

fn build(dfa: &DFA, cache: &mut Cache) -> Option<Graph> {
    let start = dfa
        .start_state(cache, &start::Config::new().anchored(Anchored::No))
        .ok()?;
    // Looked up once per edge: a fast hash, not SipHash.
    let mut index: rustc_hash::FxHashMap<Node, usize> = rustc_hash::FxHashMap::default();
    let mut nodes: Vec<Node> = Vec::new();
    let mut graph = Graph {
        units: units(dfa),
        edges: Vec::new(),
        starts: vec![0],
        accepting: Vec::new(),
    };
    let mut queue = VecDeque::new();
    let mut add = |node: Node,
                   nodes: &mut Vec<Node>,
                   graph: &mut Graph,
                   queue: &mut VecDeque<usize>|
     -> usize {
        *index.entry(node).or_insert_with(|| {
            nodes.push(node);
            graph.accepting.push(false);
            queue.push_back(graph.len() - 1);
            graph.len() - 1
        })
    };
    add(Node::State(start), &mut nodes, &mut graph, &mut queue);
    let mut buf = [0u8; 4];
    // Nodes leave the queue in the order they were numbered, so each one's edges follow the
    // last one's.
    while let Some(n) = queue.pop_front() {
        if graph.len() > MAX_STATES {
            return None;
        }
        let Node::State(s) = nodes[n] else {
            graph.accepting[n] = true;
            graph.edges.extend((0..graph.units.len()).map(|u| (u, n)));
            graph.starts.push(graph.edges.len());
            continue;
        };
        let eoi = dfa.next_eoi_state(cache, s).ok()?;
        if eoi.is_quit() {
            return None;
        }
        graph.accepting[n] = eoi.is_match();
        'units: for u in 0..graph.units.len() {
            let mut t = s;
            for &b in graph.rep(u).encode_utf8(&mut buf).as_bytes() {
                t = dfa.next_state(cache, t, b).ok()?;
                if t.is_quit() {
                    return None;
                }
                if t.is_match() {
                    // A match ended before this byte: the value is admitted whatever follows.
                    let m = add(Node::Matched, &mut nodes, &mut graph, &mut queue);
                    graph.edges.push((u, m));
                    continue 'units;
                }
                if t.is_dead() {
                    continue 'units;
                }
            }
            let m = add(Node::State(t), &mut nodes, &mut graph, &mut queue);
            graph.edges.push((u, m));
        }
        graph.starts.push(graph.edges.len());
    }
    Some(graph)
}

/// For every node, the first character of a shortest way to an accepting node and where it
/// leads (`None`: the node accepts, or none leads there).
fn ways_out(g: &Graph) -> Vec<Option<Option<(char, usize)>>> {
    let n = g.len();
    // The edges reversed, one list for all as the graph's: into `to`, by `from` ascending.
    let mut starts = vec![0usize; n + 1];
    for &(_, to) in &g.edges {
        starts[to + 1] += 1;
    }
    for i in 0..n {
        starts[i + 1] += starts[i];
    }
    let mut reverse: Vec<(char, usize)> = vec![('\0', 0); g.edges.len()];
    let mut fill = starts.clone();
    for from in 0..n {
        for &(u, to) in g.from(from) {
            reverse[fill[to]] = (g.rep(u), from);
            fill[to] += 1;
        }
    }
    let mut out: Vec<Option<Option<(char, usize)>>> = vec![None; n];
    let mut queue = VecDeque::new();
    for (i, &a) in g.accepting.iter().enumerate() {
        if a {
            out[i] = Some(None);
            queue.push_back(i);
        }
    }
    while let Some(to) = queue.pop_front() {
        for &(c, from) in &reverse[starts[to]..starts[to + 1]] {
            if out[from].is_none() {
                out[from] = Some(Some((c, to)));
                queue.push_back(from);
            }
        }
    }
    out
}

/// For every node reachable from the start (node 0), a shortest way there: (previous, char).
fn ways_in(g: &Graph) -> Vec<Option<(usize, char)>> {
    let mut out: Vec<Option<(usize, char)>> = vec![None; g.len()];
    let mut seen = vec![false; g.len()];
    seen[0] = true;
    let mut queue = VecDeque::from([0usize]);
    while let Some(from) = queue.pop_front() {
        for &(u, to) in g.from(from) {
            if !seen[to] {
                seen[to] = true;
                out[to] = Some((from, g.rep(u)));
                queue.push_back(to);
            }
        }
    }
    out
}

/// For each node, how many steps `next` takes from it to the end of its chain. The chains are
/// shortest-path trees, so each ends; a node is counted once.
fn chain_lengths(n: usize, next: impl Fn(usize) -> Option<usize>) -> Vec<usize> {
    let mut out: Vec<Option<usize>> = vec![None; n];
    let mut chain = Vec::new();
    for start in 0..n {
        chain.clear();
        let mut at = start;
        let mut base = 0;
        while out[at].is_none() && chain.len() <= n {
            chain.push(at);
            match next(at) {
                Some(nx) => at = nx,
                None => break,
            }
        }
        if chain.last() != Some(&at) {
            // Stopped at a node already counted.
            base = out[at].unwrap_or(0);
        } else {
            // The chain's own end: zero steps from it.
            chain.pop();
            out[at] = Some(0);
        }
        for (k, &node) in chain.iter().rev().enumerate() {
            out[node] = Some(base + k + 1);
        }
    }
    out.into_iter().map(|l| l.unwrap_or(0)).collect()
}

fn prefix_to(ways_in: &[Option<(usize, char)>], mut node: usize) -> String {
    let mut chars = Vec::new();
    while let Some((prev, c)) = ways_in[node] {
        chars.push(c);
        node = prev;
    }
    chars.iter().rev().collect()
}

fn suffix_from(ways_out: &[Option<Option<(char, usize)>>], mut node: usize) -> String {
    let mut out = String::new();
    while let Some(Some((c, next))) = ways_out[node] {
        out.push(c);
        node = next;
    }
    out
}

fn summarise(g: &Graph) -> Admits {
    let out_ways = ways_out(g);
    let in_ways = ways_in(g);
    let alive = |n: usize| out_ways[n].is_some();
    let mut admits = Admits::default();
    let push = |w: String, witnesses: &mut Vec<String>| {
        if !witnesses.contains(&w) {
            witnesses.push(w);
        }
    };
    if alive(0) {
        push(suffix_from(&out_ways, 0), &mut admits.witnesses);
    }
    // Every edge from a node reached from the start to a node that still leads to a match;
    // the shortest value through an edge on each character, built once it is known.
    let depth = chain_lengths(g.len(), |n| in_ways[n].map(|(prev, _)| prev));
    let dist = chain_lengths(g.len(), |n| out_ways[n].flatten().map(|(_, next)| next));
    // By unit: the shortest (length, from, to); every character of a unit leads alike.
    let mut best: Vec<Option<(usize, usize, usize)>> = vec![None; g.units.len()];
    let mut first_units = vec![false; g.units.len()];
    for from in 0..g.len() {
        if from != 0 && in_ways[from].is_none() {
            continue;
        }
        for &(u, to) in g.from(from) {
            if !alive(to) {
                continue;
            }
            if from == 0 {
                first_units[u] = true;
            }
            let len = depth[from] + 1 + dist[to];
            if best[u].is_none_or(|(l, _, _)| len < l) {
                best[u] = Some((len, from, to));
            }
        }
    }
    let mut values: Vec<(char, String)> = Vec::new();
    // Gathered first, then the sets built at once from them (cheaper than one insert each).
    let (mut anywhere, mut first) = (Vec::new(), Vec::new());
    for (u, found) in best.iter().enumerate() {
        let Some((_, from, to)) = *found else {
            continue;
        };
        anywhere.extend(g.units[u].iter().copied());
        if first_units[u] {
            first.extend(g.units[u].iter().copied());
        }
        let (prefix, suffix) = (prefix_to(&in_ways, from), suffix_from(&out_ways, to));
        for &c in &g.units[u] {
            let mut value = String::with_capacity(prefix.len() + c.len_utf8() + suffix.len());
            value.push_str(&prefix);
            value.push(c);
            value.push_str(&suffix);
            values.push((c, value));
        }
    }
    admits.anywhere = anywhere.into_iter().collect();
    admits.first = first.into_iter().collect();
    // Each character is in one unit: ordered by it alone.
    values.sort_unstable_by_key(|&(c, _)| c);
    for (_, v) in values {
        push(v, &mut admits.witnesses);
    }
    if let Some(long) = long_value(g, &in_ways, &out_ways) {
        push(long, &mut admits.witnesses);
    }
    admits
}

/// An admitted value of at least [`LONG`] characters, when the pattern admits any length: a
/// way to a node on a cycle of live nodes, around the cycle until long enough, and out. One
/// depth-first walk over the live nodes finds a cycle (an edge back to a node on its path).
fn long_value(
    g: &Graph,
    in_ways: &[Option<(usize, char)>],
    out_ways: &[Option<Option<(char, usize)>>],
) -> Option<String> {
    let live = |n: usize| (n == 0 || in_ways[n].is_some()) && out_ways[n].is_some();
    if !live(0) {
        return None;
    }
    // 0: not seen, 1: on the path, 2: done.
    let mut state = vec![0u8; g.len()];
    // The path: (node, next edge to try, the character that entered it).
    let mut path: Vec<(usize, usize, char)> = vec![(0, 0, '\0')];
    state[0] = 1;
    while let Some(&mut (node, ref mut next, _)) = path.last_mut() {
        let Some(&(u, to)) = g.from(node).get(*next) else {
            state[node] = 2;
            path.pop();
            continue;
        };
        let c = g.rep(u);
        *next += 1;
        if !live(to) {
            continue;
        }
        match state[to] {
            0 => {
                state[to] = 1;
                path.push((to, 0, c));
            }
            1 => {
                // A cycle: from `to` along the path to `node`, then `c` back to `to`.
                let at = path.iter().position(|&(n, _, _)| n == to)?;
                let mut cycle: String = path[at + 1..].iter().map(|&(_, _, ch)| ch).collect();
                cycle.push(c);
                let times = LONG.div_ceil(cycle.chars().count().max(1));
                return Some(format!(
                    "{}{}{}",
                    prefix_to(in_ways, to),
                    cycle.repeat(times),
                    suffix_from(out_ways, to)
                ));
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(pattern: &str) -> Admits {
        let a = explore(pattern).expect("explored");
        if let Some(chain) = Chain::read(pattern) {
            // The three ways of reading a chain give the same answer.
            assert_eq!(Some(&a), explore_dfa(pattern).as_ref(), "{pattern}");
            assert_eq!(a, summarise(&chain.graph()), "{pattern}");
        }
        let re = regex::Regex::new(pattern).expect("a pattern");
        for w in &a.witnesses {
            assert!(re.is_match(w), "{pattern}: witness {w:?} is not admitted");
        }
        // The alphabet is walked a byte class at a time: every character found is still
        // shown by a value that holds it, and every character left out is one no value holds.
        for c in &a.anywhere {
            assert!(
                a.witnesses.iter().any(|w| w.contains(*c)),
                "{pattern}: no witness holds {c:?}"
            );
        }
        for c in alphabet().into_iter().filter(|c| !a.anywhere.contains(c)) {
            let holds = |w: &String| w.contains(c);
            assert!(
                !a.witnesses.iter().any(holds),
                "{pattern}: {c:?} is in a witness but not found"
            );
            let probe = format!("a{c}b");
            if !re.is_match(&probe) {
                continue;
            }
            panic!("{pattern}: {probe:?} is admitted but {c:?} was not found");
        }
        a
    }

    #[test]
    fn a_name_pattern_admits_only_names() {
        let a = check("^[a-z0-9][a-z0-9-]{0,63}$");
        assert!(a.only_names(), "{a:?}");
        assert!(!a.anywhere.contains(&'/'));
        assert!(a.first.contains(&'a') && !a.first.contains(&'-'));
        assert!(
            a.witnesses.iter().any(|w| w.contains('-')),
            "{:?}",
            a.witnesses
        );
        // Bounded to 64 characters: no long value.
        assert!(
            a.witnesses.iter().all(|w| w.len() <= 64),
            "{:?}",
            a.witnesses
        );
    }

    #[test]
    fn an_unanchored_pattern_admits_anything_around_its_match() {
        let a = check("[a-z]+");
        assert!(!a.only_names());
        for c in ['/', ';', '$', '\n', '\u{202e}'] {
            assert!(a.anywhere.contains(&c), "{c:?}");
        }
        assert!(a.first.contains(&'-'));
        assert!(a.witnesses.iter().any(|w| w.chars().count() >= LONG));
    }

    #[test]
    fn a_witness_is_found_for_a_character_no_list_names() {
        // `~` is in no list of hostile values; the pattern admits it only in the middle.
        let a = check("^a[b~]c$");
        assert!(a.anywhere.contains(&'~'));
        assert!(!a.first.contains(&'~'));
        assert!(
            a.witnesses.contains(&"a~c".to_string()),
            "{:?}",
            a.witnesses
        );
    }

    #[test]
    fn a_branch_pattern_with_a_slash_is_not_only_names() {
        let a = check("^[A-Za-z0-9/_.-]+$");
        assert!(!a.only_names());
        assert!(a.first.contains(&'.') && a.first.contains(&'/'));
    }

    #[test]
    fn an_empty_match_admits_everything() {
        let a = check("x*");
        assert!(a.anywhere.contains(&'\0'));
        assert!(a.witnesses.contains(&String::new()));
    }

    /// Patterns read as a chain, straight from their syntax: each gives what the lazy DFA gives.
    const CHAINS: &[&str] = &[
        "^[a-z0-9][a-z0-9-]{0,63}$",
        "^[a-z0-9][a-z0-9-]{0,62}$",
        "^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$",
        "^[A-Za-z0-9/_.-]+$",
        "^/[A-Za-z0-9/._-]+$",
        "^[a-z]+$",
        "^[a-z]*$",
        "^[a-z]{2,}$",
        "^[a-z]{3,5}$",
        "^a[b~]c$",
        "^$",
        "^",
        "^abc",
        "^v[0-9]{1,3}",
        "^[a-z]+",
        "^[a-z]*",
        "^a{2}[b-d]*$",
        "^[a-z]{0,3}$",
        "^x{3}y?$",
        "^(?:ab)c{0,2}$",
        "^(ab)(?P<n>[0-9])+?$",
        "^a{0}b$",
        "\\A[a-z]+\\z",
        "(?i)^abc$",
        "(?-u)^[a-z]+$",
        "^\\w{3}$",
        "^\\d+$",
        "^.{2}$",
        "(?s)^.{1,2}$",
        "^[^a-z]{1,4}$",
        "^é[\u{202e}-\u{3000}]+$",
        "^\u{1f600}+$",
        "^a\u{feff}b$",
        "^[[:alpha:]]{3}$",
        "^\\$[a-z]+$",
        "^ +$",
        "^[α-ω]+$",
        "^a[^\\s\\S]b$",
        "^a[^\\s\\S]*$",
        "^[\\x00-\\x7f]{2}$",
    ];

    #[test]
    fn a_chain_is_read_from_its_syntax_as_the_lazy_dfa_reads_it() {
        for pattern in CHAINS {
            assert!(Chain::read(pattern).is_some(), "{pattern} is a chain");
            check(pattern);
        }
    }

    #[test]
    fn generated_chains_are_read_as_the_lazy_dfa_reads_them() {
        // Pieces and counts a pattern is written with, joined at random (a fixed seed).
        const SETS: &[&str] = &[
            "a",
            "-",
            "[a-z]",
            "[a-z0-9-]",
            "[^a-z]",
            "\\d",
            "\\w",
            "[/.]",
            "\\s",
            ".",
            "é",
            "[\u{202e}\u{1f600}]",
            "(?i:k)",
            "[[:punct:]]",
            "\\x00",
        ];
        const LAST: &[&str] = &["", "?", "*", "+", "{2}", "{0,3}", "{2,}", "{1,4}?"];
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            usize::try_from(seed % n as u64).unwrap_or(0)
        };
        for _ in 0..120 {
            let mut pattern = "^".to_owned();
            for _ in 0..next(4) {
                pattern.push_str(SETS[next(SETS.len())]);
                pattern.push_str(["", "{3}", "{0}"][next(3)]);
            }
            if next(5) > 0 {
                pattern.push_str(SETS[next(SETS.len())]);
                pattern.push_str(LAST[next(LAST.len())]);
            }
            if next(3) > 0 {
                pattern.push('$');
            }
            assert!(Chain::read(&pattern).is_some(), "{pattern} is a chain");
            check(&pattern);
        }
    }

    #[test]
    fn a_pattern_that_is_no_chain_is_read_by_the_lazy_dfa() {
        for pattern in [
            "[a-z]+",
            "a$",
            "^(ab|cd)$",
            "^(ab)+$",
            "^[a-z]+[0-9]$",
            "^a?b$",
            "(?m)^a$",
            "^a$|^b$",
            "(?-u)^a\\b",
            "^a$b",
            "x*",
        ] {
            assert!(Chain::read(pattern).is_none(), "{pattern} is no chain");
            assert_eq!(explore(pattern), explore_dfa(pattern), "{pattern}");
            check(pattern);
        }
    }

    #[test]
    fn a_chain_longer_than_the_states_explored_is_left_to_the_lazy_dfa() {
        assert!(Chain::read("^[a-z]{4000}$").is_some());
        assert!(Chain::read("^[a-z]{5000}$").is_none());
        assert!(Chain::read("^a{3000}[a-z]{3000}$").is_none());
    }

    #[test]
    fn a_pattern_too_big_to_explore_is_taken_to_admit_anything() {
        let a = of_pattern("^\\w{200}[a-z]{0,500}$");
        // Either explored exactly or, past the bound, anything.
        assert!(a.unknown || a.anywhere.contains(&'a'));
        assert!(!a.only_names() || !a.unknown);
    }
}
