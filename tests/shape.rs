//! The shape of the code, held (the redesign issues' rules, so that a later change cannot
//! quietly undo them):
//!
//! * **No import circle between the modules of a folder**, in every folder of the product's
//!   sources ([`ROOTS`]). The modules of a folder are its files `x.rs` and its folders
//!   `x/`; the folder's own file (`lib.rs`, `main.rs`, `mod.rs`, or `x.rs` beside `x/`)
//!   declares them and is none of them. A module imports a sibling when code anywhere in it
//!   names a path into the sibling: `crate::…`, `super::…` and `self::…` paths, in `use`
//!   trees or inline, and a name the folder's own file imports from a sibling counts as that
//!   sibling. Comments, strings, `#[cfg(test)]` items and the files they declare are left
//!   out. A circle is a strongly connected set of more than one module.
//! * **No source file much over 600 lines** ([`MOST_LINES`]) before its tests, outside the
//!   circuit.
//! * **No product function over 150 lines** ([`MOST_FN_LINES`]): a `fn` item with a body,
//!   counted from the line of `fn` to the line of its closing brace (a nested `fn` counts in
//!   its parent too), in the sources of [`ROOTS`] outside `#[cfg(test)]` items and the
//!   files they declare (benches and the `tests/` folder are not scanned).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The product's source folders, checked for import circles and measured for long functions
/// (each a crate's `src`: `crate::` paths start there).
const ROOTS: &[&str] = &[
    "tui/src",
    "tui/collect/src",
    "prover/src",
    "shared/src",
    "shared/emit/src",
    "kernels/src",
];

/// Lines a product function may have.
const MOST_FN_LINES: usize = 150;

/// Lines a source file may have before its test module.
const MOST_LINES: usize = 650;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            if !matches!(
                p.file_name().and_then(|n| n.to_str()),
                Some("target" | "fuzz")
            ) {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The Rust files under `dir`: (path relative to `dir` with `/` separators, text).
fn sources(dir: &str) -> Vec<(String, String)> {
    let base = root().join(dir);
    let mut files = Vec::new();
    rust_files(&base, &mut files);
    let mut out: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(&base).unwrap();
            let rel: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into()).collect();
            (rel.join("/"), std::fs::read_to_string(f).unwrap())
        })
        .collect();
    out.sort();
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `text` with the insides of comments, strings and character literals replaced by spaces
/// (newlines kept, so lines and positions still match the file).
fn blank(text: &str) -> Vec<char> {
    let s: Vec<char> = text.chars().collect();
    let mut out = s.clone();
    let wipe = |out: &mut Vec<char>, a: usize, b: usize| {
        for c in &mut out[a..b.min(s.len())] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        // `b'x'` and `b"x"` are literals too.
        let byte = i > 0 && s[i - 1] == 'b' && (i < 2 || !is_ident(s[i - 2]));
        let prev_ident = i > 0 && is_ident(s[i - 1]) && !byte;
        if c == '/' && next == Some('/') {
            let end = s[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(s.len(), |n| i + n);
            wipe(&mut out, i, end);
            i = end;
        } else if c == '/' && next == Some('*') {
            let (mut depth, mut j) = (1, i + 2);
            while j < s.len() && depth > 0 {
                if s[j] == '/' && s.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if s[j] == '*' && s.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            wipe(&mut out, i, j);
            i = j;
        } else if !prev_ident && (c == 'r' || (c == 'b' && next == Some('r'))) && {
            let k = if c == 'b' { i + 2 } else { i + 1 };
            let hashes = s[k..].iter().take_while(|&&c| c == '#').count();
            s.get(k + hashes) == Some(&'"')
        } {
            let k = if c == 'b' { i + 2 } else { i + 1 };
            let hashes = s[k..].iter().take_while(|&&c| c == '#').count();
            let body = k + hashes + 1;
            let mut j = body;
            while j < s.len() {
                if s[j] == '"'
                    && s[j + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&c| c == '#')
                        .count()
                        == hashes
                {
                    break;
                }
                j += 1;
            }
            wipe(&mut out, body, j);
            i = j + 1 + hashes;
        } else if c == '"' {
            let mut j = i + 1;
            while j < s.len() && s[j] != '"' {
                j += if s[j] == '\\' { 2 } else { 1 };
            }
            wipe(&mut out, i + 1, j);
            i = j + 1;
        } else if c == '\'' && !prev_ident {
            // A character literal ('x', '\n', '{'), else a lifetime or a label.
            if next == Some('\\') {
                let mut j = i + 2;
                while j < s.len() && s[j] != '\'' {
                    j += 1;
                }
                wipe(&mut out, i + 1, j);
                i = j + 1;
            } else if s.get(i + 2) == Some(&'\'') {
                wipe(&mut out, i + 1, i + 2);
                i += 3;
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The end (exclusive) of the item starting at `from`: after its first `;` or its first
/// balanced `{…}`, whichever comes first outside parentheses and brackets.
fn item_end(s: &[char], from: usize) -> usize {
    let mut depth = 0i32;
    let mut i = from;
    while i < s.len() {
        match s[i] {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ';' if depth == 0 => return i + 1,
            '{' if depth == 0 => return block_end(s, i),
            _ => {}
        }
        i += 1;
    }
    s.len()
}

/// The end (exclusive) of the `{…}` block opening at `open`.
fn block_end(s: &[char], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, &c) in s.iter().enumerate().skip(open) {
        if c == '{' {
            depth += 1;
        } else if c == '}' {
            depth -= 1;
            if depth == 0 {
                return i + 1;
            }
        }
    }
    s.len()
}

fn find(s: &[char], pat: &str, from: usize) -> Option<usize> {
    let p: Vec<char> = pat.chars().collect();
    (from..s.len().saturating_sub(p.len() - 1)).find(|&i| s[i..i + p.len()] == p[..])
}

/// A file's code as [`blank`] leaves it, with its `#[cfg(test)]` items blanked too; and the
/// names of the modules those items declare (files that are tests).
fn product_code(text: &str) -> (Vec<char>, Vec<String>) {
    let mut s = blank(text);
    let mut test_mods = Vec::new();
    let mut at = 0;
    while let Some(i) = find(&s, "#[cfg(test)]", at) {
        let end = item_end(&s, i);
        let item: String = s[i + "#[cfg(test)]".len()..end].iter().collect();
        let words: Vec<&str> = item
            .split(|c: char| !is_ident(c))
            .filter(|w| !w.is_empty())
            .collect();
        if let Some(k) = words.iter().position(|w| *w == "mod") {
            if item.trim_end().ends_with(';') {
                if let Some(name) = words.get(k + 1) {
                    test_mods.push(name.to_string());
                }
            }
        }
        for c in &mut s[i..end] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        at = end;
    }
    (s, test_mods)
}

/// A path as written: its segments, and the name it is imported as (`as` or the last).
type Written = (Vec<String>, String);

/// The paths of the `use` tree or inline path starting at `i` (a leading `crate`, `super`
/// or `self` included in the segments).
fn use_tree(s: &[char], mut i: usize, prefix: &mut Vec<String>, out: &mut Vec<Written>) {
    let skip_ws = |i: &mut usize| {
        while *i < s.len() && s[*i].is_whitespace() {
            *i += 1;
        }
    };
    let base = prefix.len();
    loop {
        skip_ws(&mut i);
        if s.get(i) == Some(&'{') {
            i += 1;
            loop {
                skip_ws(&mut i);
                match s.get(i) {
                    Some('}') | None => break,
                    Some(',') => i += 1,
                    _ => {
                        let start = i;
                        use_tree(s, i, prefix, out);
                        i = tree_end(s, start);
                    }
                }
            }
            break;
        }
        let start = i;
        while i < s.len() && is_ident(s[i]) {
            i += 1;
        }
        if i == start {
            if s.get(i) == Some(&'*') {
                prefix.push("*".into());
                out.push((prefix.clone(), "*".into()));
            }
            break;
        }
        prefix.push(s[start..i].iter().collect());
        let mut j = i;
        skip_ws(&mut j);
        if s.get(j) == Some(&':') && s.get(j + 1) == Some(&':') {
            i = j + 2;
            continue;
        }
        let mut name = prefix.last().cloned().unwrap_or_default();
        if starts_at(s, j, "as") && s.get(j + 2).is_some_and(|c| c.is_whitespace()) {
            let k = j + 2 + s[j + 2..].iter().take_while(|c| c.is_whitespace()).count();
            name = s[k..].iter().take_while(|&&c| is_ident(c)).collect();
        }
        out.push((prefix.clone(), name));
        break;
    }
    prefix.truncate(base);
}

/// Where a use tree starting at `i` (inside a group) ends: at the `,` or `}` that closes it.
fn tree_end(s: &[char], mut i: usize) -> usize {
    let mut depth = 0i32;
    while i < s.len() {
        match s[i] {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            ',' if depth == 0 => return i,
            _ => {}
        }
        i += 1;
    }
    i
}

/// Every path in `s` that starts with `crate::`, `super::` or `self::`, and (`bare`) every
/// `use` tree's paths however they start.
fn paths(s: &[char], bare: bool) -> Vec<Written> {
    let mut out = Vec::new();
    for (i, _) in s.iter().enumerate() {
        if i > 0 && is_ident(s[i - 1]) {
            continue;
        }
        let rest = &s[i..];
        let starts = |p: &str| rest.iter().take(p.len()).copied().eq(p.chars());
        if starts("crate::") || starts("super::") || starts("self::") {
            // Inside a group, the tree is read from its `use`.
            let before: String = s[i.saturating_sub(2)..i].iter().collect();
            if !before.ends_with(':') {
                use_tree(s, i, &mut Vec::new(), &mut out);
            }
        } else if bare && starts("use ") {
            let mut from = i + 4;
            while s.get(from).is_some_and(|c| c.is_whitespace()) {
                from += 1;
            }
            if !(starts_at(s, from, "crate::")
                || starts_at(s, from, "super::")
                || starts_at(s, from, "self::"))
            {
                use_tree(s, from, &mut Vec::new(), &mut out);
            }
        }
    }
    out
}

fn starts_at(s: &[char], i: usize, p: &str) -> bool {
    s[i.min(s.len())..]
        .iter()
        .take(p.len())
        .copied()
        .eq(p.chars())
}

/// One source file of a crate, as the circle check sees it.
struct Module {
    /// Module path from the crate root (`["model", "spans"]`; `[]` for `lib.rs`).
    path: Vec<String>,
    /// Whether it is the own file of the folder at `path`.
    own_file: bool,
    code: Vec<char>,
}

/// A graph of named nodes: node → the nodes it imports.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// The import graph between the modules of every folder of one crate's sources, given as
/// (path relative to `src`, text): folder (`""` for `src`, `"model"`, `"monitor/metrics"`) →
/// graph. See the module docs for what counts.
fn folder_graphs(files: Vec<(String, String)>) -> BTreeMap<String, Graph> {
    let files = product_files(files);
    let dirs: BTreeSet<String> = files
        .iter()
        .filter_map(|(p, _)| p.rsplit_once('/').map(|(d, _)| d.to_string()))
        .flat_map(|d| {
            let parts: Vec<&str> = d.split('/').collect();
            (1..=parts.len())
                .map(|n| parts[..n].join("/"))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut modules = Vec::new();
    for (rel, text) in &files {
        // `main.rs` beside `lib.rs` is another crate.
        if rel == "main.rs" && files.iter().any(|(p, _)| p == "lib.rs") {
            continue;
        }
        let mut parts: Vec<String> = rel.split('/').map(String::from).collect();
        let file = parts.pop().unwrap_or_default();
        let stem = file.trim_end_matches(".rs").to_string();
        let (path, own_file) = match stem.as_str() {
            "lib" | "main" if parts.is_empty() => (parts, true),
            "mod" => (parts, true),
            _ => {
                let own = dirs.contains(
                    &parts
                        .iter()
                        .chain([&stem])
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("/"),
                );
                parts.push(stem);
                (parts, own)
            }
        };
        let code = product_code(text).0;
        modules.push(Module {
            path,
            own_file,
            code,
        });
    }
    // The nodes of each folder, and the names a folder's own file imports from them.
    let mut nodes: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for m in &modules {
        for k in 0..m.path.len() {
            nodes
                .entry(m.path[..k].to_vec())
                .or_default()
                .insert(m.path[k].clone());
        }
    }
    let resolve = |from: &[String], written: &[String]| -> Option<Vec<String>> {
        let mut p: Vec<String> = Vec::new();
        let mut rest = written;
        match written.first().map(String::as_str) {
            Some("crate") => rest = &written[1..],
            Some("self") => {
                p = from.to_vec();
                rest = &written[1..];
            }
            Some("super") => {
                p = from.to_vec();
                while rest.first().map(String::as_str) == Some("super") {
                    p.pop()?;
                    rest = &rest[1..];
                }
            }
            _ => p = from.to_vec(),
        }
        p.extend(rest.iter().cloned());
        Some(p)
    };
    let mut imported: BTreeMap<Vec<String>, BTreeMap<String, String>> = BTreeMap::new();
    for m in modules.iter().filter(|m| m.own_file) {
        let children = nodes.get(&m.path).cloned().unwrap_or_default();
        for (written, name) in paths(&m.code, true) {
            let Some(abs) = resolve(&m.path, &written) else {
                continue;
            };
            if abs.len() > m.path.len() + 1
                && abs.starts_with(&m.path)
                && children.contains(&abs[m.path.len()])
                && name != "*"
            {
                imported
                    .entry(m.path.clone())
                    .or_default()
                    .insert(name, abs[m.path.len()].clone());
            }
        }
    }
    let mut graphs: BTreeMap<String, Graph> = BTreeMap::new();
    for (folder, names) in &nodes {
        let g = graphs.entry(folder.join("/")).or_default();
        for n in names {
            g.entry(n.clone()).or_default();
        }
    }
    for m in &modules {
        for (written, _) in paths(&m.code, false) {
            let Some(abs) = resolve(&m.path, &written) else {
                continue;
            };
            // The folder where the two paths part: the edge is between its modules.
            let k = m.path.iter().zip(&abs).take_while(|(a, b)| a == b).count();
            if k >= m.path.len() || k >= abs.len() {
                continue;
            }
            let folder = &m.path[..k];
            let Some(names) = nodes.get(folder) else {
                continue;
            };
            let to = if names.contains(&abs[k]) {
                Some(abs[k].clone())
            } else {
                imported.get(folder).and_then(|i| i.get(&abs[k])).cloned()
            };
            if let Some(to) = to.filter(|t| *t != m.path[k]) {
                graphs
                    .entry(folder.join("/"))
                    .or_default()
                    .entry(m.path[k].clone())
                    .or_default()
                    .insert(to);
            }
        }
    }
    graphs
}

/// The circles of `graph` (Tarjan's strongly connected components of more than one node).
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        for w in &t.g[v] {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.stack.contains(&w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_module_of_a_folder_imports_one_that_imports_it_back() {
    let mut found = Vec::new();
    for dir in ROOTS {
        let graphs = folder_graphs(sources(dir));
        if *dir == "tui/src" {
            let top = &graphs[""];
            assert!(top.len() > 20, "the scan found the modules: {top:?}");
            assert!(
                top["live"].contains("monitor"),
                "the scan sees imports: {top:?}"
            );
            assert!(graphs.contains_key("model") && graphs.contains_key("ui/timeline"));
        }
        for (folder, g) in &graphs {
            for c in circles(g) {
                found.push(format!("{dir}/{folder}: {c:?}"));
            }
        }
    }
    assert!(found.is_empty(), "import circles: {found:#?}");
}

fn graphs_of(files: &[(&str, &str)]) -> BTreeMap<String, Graph> {
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
    folder_graphs(files)
}

fn edges(g: &Graph) -> Vec<(String, String)> {
    g.iter()
        .flat_map(|(a, bs)| bs.iter().map(move |b| (a.clone(), b.clone())))
        .collect()
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.into(), b.into())
}

#[test]
fn the_scan_sees_imports_through_super_crate_groups_and_the_folders_own_file() {
    let g = graphs_of(&[
        ("lib.rs", "pub mod model;\npub mod series;\npub mod ui;"),
        (
            "model/mod.rs",
            "mod effects;\nmod spans;\nmod span;\npub use span::{PhaseSpan as Ps, Other};\n\
             #[cfg(test)]\nmod tests;\npub struct Model;",
        ),
        (
            "model/effects.rs",
            "use super::{span::X, Model};\n// super::spans::Y in a comment\nfn f() { let s = \"crate::model::spans\"; }",
        ),
        (
            "model/spans.rs",
            "use crate::model::{\n    effects::{Effect, Effects},\n    Ps,\n};\nuse crate::series::Point;",
        ),
        ("model/span.rs", "pub struct PhaseSpan;"),
        ("model/tests.rs", "use super::spans::*;\nuse super::effects::E;"),
        ("series.rs", "#[cfg(test)]\nmod tests {\n    use crate::model::Model;\n}"),
        ("ui/mod.rs", "mod timeline;\nmod chart;"),
        ("ui/timeline.rs", "mod marks;\nuse self::marks::M;\nfn f() { super::chart::draw() }"),
        ("ui/timeline/marks.rs", "use crate::model::Model;\nuse super::super::chart::C;"),
        ("ui/chart.rs", "fn draw() { crate::ui::timeline::marks::M; }"),
    ]);
    assert_eq!(
        edges(&g[""]),
        vec![pair("model", "series"), pair("ui", "model")]
    );
    assert_eq!(
        edges(&g["model"]),
        vec![
            pair("effects", "span"),
            pair("spans", "effects"),
            pair("spans", "span")
        ]
    );
    assert_eq!(
        edges(&g["ui"]),
        vec![pair("chart", "timeline"), pair("timeline", "chart")]
    );
    assert_eq!(
        circles(&g["ui"]),
        vec![vec!["chart".to_string(), "timeline".into()]]
    );
    assert!(edges(&g["ui/timeline"]).is_empty());
}

#[test]
fn the_circle_finder_finds_a_circle_of_three() {
    let mut g = Graph::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        g.entry(a.into()).or_default().insert(b.into());
        g.entry(b.into()).or_default();
    }
    assert_eq!(
        circles(&g),
        vec![vec!["a".to_string(), "b".into(), "c".into()]]
    );
}

/// The functions with a body in `text`: (name, line of `fn` from 1, lines).
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let (s, _) = product_code(text);
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(at) = find(&s, "fn", i) {
        i = at + 2;
        let word =
            (at == 0 || !is_ident(s[at - 1])) && s.get(at + 2).is_some_and(|c| c.is_whitespace());
        if !word {
            continue;
        }
        let name: String = s[at + 2..]
            .iter()
            .skip_while(|c| c.is_whitespace())
            .take_while(|&&c| is_ident(c))
            .collect();
        if name.is_empty() {
            continue;
        }
        let end = item_end(&s, at);
        if s[..end].last() != Some(&'}') {
            continue;
        }
        let line = s[..at].iter().filter(|&&c| c == '\n').count() + 1;
        let lines = s[at..end].iter().filter(|&&c| c == '\n').count() + 1;
        out.push((name, line, lines));
    }
    out
}

/// `files` (path relative to a crate's `src`, text) without those only tests declare
/// (`#[cfg(test)] mod tests;` in `x.rs` or `x/mod.rs` is `x/tests.rs` or `x/tests/…`).
fn product_files(files: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut test_mods: Vec<String> = Vec::new();
    for (rel, text) in &files {
        let stem = rel.trim_end_matches(".rs");
        let folder = match stem.strip_suffix("mod").or(stem.strip_suffix("lib")) {
            Some(d) if d.is_empty() || d.ends_with('/') => d.to_string(),
            _ if stem == "main" => String::new(),
            _ => format!("{stem}/"),
        };
        for t in product_code(text).1 {
            test_mods.push(format!("{folder}{t}"));
        }
    }
    files
        .into_iter()
        .filter(|(rel, _)| {
            let stem = rel.trim_end_matches(".rs").trim_end_matches("/mod");
            !test_mods
                .iter()
                .any(|t| stem == t || stem.starts_with(&format!("{t}/")))
        })
        .collect()
}

/// Every product function over [`MOST_FN_LINES`] lines: (file, name, line, lines).
fn long_functions() -> Vec<(String, String, usize, usize)> {
    let mut out = Vec::new();
    for dir in ROOTS {
        for (rel, text) in product_files(sources(dir)) {
            for (name, line, lines) in functions(&text) {
                if lines > MOST_FN_LINES {
                    out.push((format!("{dir}/{rel}"), name, line, lines));
                }
            }
        }
    }
    out
}

#[test]
fn no_product_function_is_over_150_lines() {
    let long: Vec<String> = long_functions()
        .into_iter()
        .map(|(f, name, line, n)| format!("{f}:{line} {name} ({n} lines)"))
        .collect();
    assert!(
        long.is_empty(),
        "functions over {MOST_FN_LINES} lines: {long:#?}"
    );
}

#[test]
fn the_function_scan_counts_bodies_not_braces_in_strings_or_tests() {
    let text = "fn a() {\n    let s = \"{\";\n    let c = '{';\n    let r = r#\"}\"#;\n}\n\
                pub(crate) fn b<'a>(x: [u8; 2]) -> &'a str\nwhere\n    u8: Copy,\n{\n    \"\"\n}\n\
                trait T {\n    fn c(&self);\n    fn d(&self) {}\n}\n\
                #[cfg(test)]\nmod tests {\n    fn e() {\n    }\n}\n\
                fn f(g: fn(u8) -> u8) { // }\n}\n";
    assert_eq!(
        functions(text),
        vec![
            ("a".to_string(), 1, 5),
            ("b".into(), 6, 6),
            ("d".into(), 14, 1),
            ("f".into(), 21, 2)
        ]
    );
}

#[test]
fn no_source_file_outside_tests_and_the_circuit_is_much_over_600_lines() {
    let mut files = Vec::new();
    for dir in [
        "tui/src",
        "tui/collect/src",
        "shared/src",
        "shared/emit/src",
        "prover/src",
        "kernels/src",
    ] {
        rust_files(&root().join(dir), &mut files);
    }
    assert!(files.len() > 100, "{} files", files.len());
    let long: Vec<String> = files
        .iter()
        .filter(|f| !f.ends_with("prover/src/circuit.rs") && !f.ends_with("tests.rs"))
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let n = text
                .split("#[cfg(test)]")
                .next()
                .unwrap_or("")
                .lines()
                .count();
            (n > MOST_LINES).then(|| format!("{} ({n} lines)", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files over {MOST_LINES} lines before their tests: {long:#?}"
    );
}
