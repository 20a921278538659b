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
//! A pattern the exploration cannot finish (too many states, a construct the lazy DFA gives up
//! on) is taken to admit anything: unknown is untrusted.

use std::collections::{BTreeSet, HashMap, VecDeque};

use regex_automata::hybrid::LazyStateID;
use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::util::start;
use regex_automata::{Anchored, nfa::thompson};

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
/// words, hex), then by its pattern. Cached per pattern for the process.
pub fn admits(input: &Input) -> Admits {
    let typed: Option<&[char]> = match input.ty.value {
        InputType::String => None,
        InputType::Int => Some(&['-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']),
        InputType::Bool => Some(&['t', 'r', 'u', 'e', 'f', 'a', 'l', 's']),
        InputType::Sha => Some(&[
            '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b', 'c', 'd', 'e', 'f', 'A',
            'B', 'C', 'D', 'E', 'F',
        ]),
    };
    let mut out = match &input.pattern {
        None => Admits::anything(),
        Some(p) => of_pattern(&p.value),
    };
    if let Some(chars) = typed {
        // The type is checked before the pattern: a value holds only what both admit.
        out.unknown = false;
        out.anywhere.retain(|c| chars.contains(c));
        out.first.retain(|c| chars.contains(c));
        if input.ty.value != InputType::Int {
            out.first.remove(&'-');
        }
    }
    out
}

/// What `pattern` admits, from a cache of the process (like `run::inputs::regex`).
pub fn of_pattern(pattern: &str) -> Admits {
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<String, Admits>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(a) = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(pattern)
    {
        return a.clone();
    }
    let admits = explore(pattern).unwrap_or_else(Admits::anything);
    let mut map = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if map.len() < CACHED {
        map.insert(pattern.to_owned(), admits.clone());
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
    nodes: Vec<Node>,
    /// The alphabet in units: the characters each leads alike from every state (the ASCII
    /// characters of one byte class of the DFA, or one character beyond ASCII), in the order
    /// of their smallest character, each unit's characters in order.
    units: Vec<Vec<char>>,
    /// Edges by node: (unit, target node index), in unit order.
    edges: Vec<Vec<(usize, usize)>>,
    accepting: Vec<bool>,
}

impl Graph {
    /// The character a path through unit `u` is written with: its smallest.
    fn rep(&self, u: usize) -> char {
        self.units[u][0]
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

/// Explores the pattern's automaton; `None` when it cannot finish.
fn explore(pattern: &str) -> Option<Admits> {
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
    let mut graph = Graph {
        nodes: Vec::new(),
        units: units(dfa),
        edges: Vec::new(),
        accepting: Vec::new(),
    };
    let mut queue = VecDeque::new();
    let mut add = |node: Node, graph: &mut Graph, queue: &mut VecDeque<usize>| -> usize {
        *index.entry(node).or_insert_with(|| {
            graph.nodes.push(node);
            graph.edges.push(Vec::new());
            graph.accepting.push(false);
            queue.push_back(graph.nodes.len() - 1);
            graph.nodes.len() - 1
        })
    };
    add(Node::State(start), &mut graph, &mut queue);
    let mut buf = [0u8; 4];
    while let Some(n) = queue.pop_front() {
        if graph.nodes.len() > MAX_STATES {
            return None;
        }
        let Node::State(s) = graph.nodes[n] else {
            graph.accepting[n] = true;
            graph.edges[n] = (0..graph.units.len()).map(|u| (u, n)).collect();
            continue;
        };
        let eoi = dfa.next_eoi_state(cache, s).ok()?;
        if eoi.is_quit() {
            return None;
        }
        graph.accepting[n] = eoi.is_match();
        let mut edges = Vec::new();
        'units: for u in 0..graph.units.len() {
            let mut t = s;
            for &b in graph.rep(u).encode_utf8(&mut buf).as_bytes() {
                t = dfa.next_state(cache, t, b).ok()?;
                if t.is_quit() {
                    return None;
                }
                if t.is_match() {
                    // A match ended before this byte: the value is admitted whatever follows.
                    let m = add(Node::Matched, &mut graph, &mut queue);
                    edges.push((u, m));
                    continue 'units;
                }
                if t.is_dead() {
                    continue 'units;
                }
            }
            let m = add(Node::State(t), &mut graph, &mut queue);
            edges.push((u, m));
        }
        graph.edges[n] = edges;
    }
    Some(graph)
}

/// For every node, the first character of a shortest way to an accepting node and where it
/// leads (`None`: the node accepts, or none leads there).
fn ways_out(g: &Graph) -> Vec<Option<Option<(char, usize)>>> {
    let n = g.nodes.len();
    let mut reverse: Vec<Vec<(char, usize)>> = vec![Vec::new(); n];
    for (from, edges) in g.edges.iter().enumerate() {
        for &(u, to) in edges {
            reverse[to].push((g.rep(u), from));
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
        for &(c, from) in &reverse[to] {
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
    let mut out: Vec<Option<(usize, char)>> = vec![None; g.nodes.len()];
    let mut seen = vec![false; g.nodes.len()];
    seen[0] = true;
    let mut queue = VecDeque::from([0usize]);
    while let Some(from) = queue.pop_front() {
        for &(u, to) in &g.edges[from] {
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
    for start in 0..n {
        let mut chain = Vec::new();
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
    let depth = chain_lengths(g.nodes.len(), |n| in_ways[n].map(|(prev, _)| prev));
    let dist = chain_lengths(g.nodes.len(), |n| {
        out_ways[n].flatten().map(|(_, next)| next)
    });
    // By unit: the shortest (length, from, to); every character of a unit leads alike.
    let mut best: Vec<Option<(usize, usize, usize)>> = vec![None; g.units.len()];
    let mut first_units = vec![false; g.units.len()];
    for from in 0..g.nodes.len() {
        if from != 0 && in_ways[from].is_none() {
            continue;
        }
        for &(u, to) in &g.edges[from] {
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
    for (u, found) in best.iter().enumerate() {
        let Some((_, from, to)) = *found else {
            continue;
        };
        admits.anywhere.extend(g.units[u].iter().copied());
        if first_units[u] {
            admits.first.extend(g.units[u].iter().copied());
        }
        let (prefix, suffix) = (prefix_to(&in_ways, from), suffix_from(&out_ways, to));
        for &c in &g.units[u] {
            values.push((c, format!("{prefix}{c}{suffix}")));
        }
    }
    values.sort();
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
    let mut state = vec![0u8; g.nodes.len()];
    // The path: (node, next edge to try, the character that entered it).
    let mut path: Vec<(usize, usize, char)> = vec![(0, 0, '\0')];
    state[0] = 1;
    while let Some(&mut (node, ref mut next, _)) = path.last_mut() {
        let Some(&(u, to)) = g.edges[node].get(*next) else {
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

    #[test]
    fn a_pattern_too_big_to_explore_is_taken_to_admit_anything() {
        let a = of_pattern("^\\w{200}[a-z]{0,500}$");
        // Either explored exactly or, past the bound, anything.
        assert!(a.unknown || a.anywhere.contains(&'a'));
        assert!(!a.only_names() || !a.unknown);
    }
}
