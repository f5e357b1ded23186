//! The shape of the code, held: no import circle among the modules of `tui/src`, and no
//! source file much over 600 lines outside tests and the circuit (the redesign issue's
//! rules, so that a later change cannot quietly undo them).
//!
//! A module's imports are the `crate::NAME` paths in its code (comments and `#[cfg(test)]`
//! modules left out); a circle is a strongly connected set of more than one module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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

/// The code of a file without its comments and its inline test module.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn words_after(s: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find(prefix) {
        rest = &rest[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            out.extend(group[..end].split(',').filter_map(|w| {
                let w = w.trim().split("::").next().unwrap_or("");
                (!w.is_empty()).then(|| w.to_string())
            }));
        } else {
            let w: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
                .collect();
            out.push(w);
        }
    }
    out
}

/// Top-level module of `tui/src` → the other top-level modules it names.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = root().join("tui/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let top = rel
            .iter()
            .next()
            .unwrap()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if matches!(top.as_str(), "main" | "lib") || rel.ends_with("tests.rs") {
            continue;
        }
        let deps = words_after(&code(f), "crate::");
        graph
            .entry(top.clone())
            .or_default()
            .extend(deps.into_iter().filter(|d| *d != top));
    }
    let names: BTreeSet<String> = graph.keys().cloned().collect();
    for deps in graph.values_mut() {
        deps.retain(|d| names.contains(d));
    }
    graph
}

/// The circles of `graph` (Tarjan's strongly connected components of more than one node).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
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
fn no_module_of_tui_src_imports_one_that_imports_it_back() {
    let graph = module_graph();
    assert!(graph.len() > 20, "the scan found the modules: {graph:?}");
    assert!(
        graph["live"].contains("monitor"),
        "the scan sees imports: {graph:?}"
    );
    let found = circles(&graph);
    assert!(
        found.is_empty(),
        "import circles among tui/src modules: {found:?}"
    );
}

#[test]
fn the_circle_finder_finds_a_circle_of_three() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        g.entry(a.into()).or_default().insert(b.into());
        g.entry(b.into()).or_default();
    }
    assert_eq!(
        circles(&g),
        vec![vec!["a".to_string(), "b".into(), "c".into()]]
    );
}

/// Lines a source file may have before its test module.
const MOST_LINES: usize = 650;

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
        "files over {MOST_LINES} lines before their tests: {long:?}"
    );
}
