//! Import circles: no files of one crate may import each other in a
//! circle, of any length.
//!
//! The test reads every `.rs` file under the `src/` of the workspace's
//! crates, works out which other files of the same crate each one imports
//! (`use crate::…`, `use super::…`, `use self::…`, a path that starts at a
//! child module declared in scope, and grouped `{…}` imports), and finds the
//! strongly connected components of that file-level import graph. It fails
//! naming every component of more than one file, with its shortest loop
//! import by import, so the message says which import to cut.
//!
//! A path resolves to the file of the longest module it names (`a/b.rs` or
//! `a/b/mod.rs`, or the file of an inline module); the item it names is
//! then followed through the re-exports of that module to the file that
//! defines it, so importing a name a `mod.rs` only re-exports is an import
//! of the file that defines it, not of the `mod.rs`. A parent declaring
//! `mod child;` does not import its child; a child's `use super::X` that
//! names an item defined in the parent file does import the parent. An
//! inline module belongs to its file. A `pub use` whose name the file's own
//! code never mentions, and a glob `pub use …::*`, only pass names on
//! (importers are followed through them), so they are not imports of their own. Test code (an item under
//! `#[cfg(test)]`, such as `mod tests { … }` or `mod test_util;`) is left
//! out: a file's tests may use any file.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// The workspace's crates, by folder.
const CRATES: [&str; 4] = ["protocol", "sim", "checker", "scenarios"];

/// A known circle that may stay for now, with the reason.
struct Allowed {
    /// The circle's files, in path order.
    files: &'static [&'static str],
    /// Why it is still there.
    reason: &'static str,
}

/// Circles the test tolerates. An entry whose circle is gone fails the
/// test, so the list can only shrink.
const ALLOWED: &[Allowed] = &[];

/// How deep re-exports are followed before the search gives up.
const MAX_REEXPORT_DEPTH: usize = 16;

/// One lexical token: an identifier (or number), `::`, or one punctuation character.
type Token = String;

/// One path a `use` brings into scope.
#[derive(Debug, Clone)]
struct UsePath {
    /// The path's segments as written (`super`, `crate`, `self` included).
    segs: Vec<String>,
    /// The name it binds (`None` for a glob `…::*`).
    name: Option<String>,
    /// The `use` statement as written, for messages.
    text: String,
    /// Whether the statement is a re-export (`pub use`, `pub(crate) use`, …).
    reexport: bool,
}

/// What one module (a file or an inline module) holds.
#[derive(Debug, Default)]
struct Module {
    /// The file it lives in.
    file: String,
    /// Names of the items defined in it.
    defines: BTreeSet<String>,
    /// Its `use` paths.
    uses: Vec<UsePath>,
    /// The paths its code writes inline (`crate::a::f()`, `super::x::Y`),
    /// outside `use` statements: imports too, but no names brought into
    /// scope.
    inline: Vec<UsePath>,
    /// Whether it is compiled for tests only (`#[cfg(test)] mod name;`).
    test_only: bool,
    /// The words its code mentions outside `use` statements.
    mentions: BTreeSet<String>,
}

/// The modules of one crate, by module path (`[]` is the crate root).
type Crate = BTreeMap<Vec<String>, Module>;

/// One file's import of another, with the `use` that makes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Edge {
    /// The importing file.
    from: String,
    /// The imported file.
    to: String,
    /// The `use` statement, as written.
    via: String,
}

/// Split Rust source into tokens, dropping comments, strings and character literals.
fn tokens(src: &str) -> Vec<Token> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && c.get(i + 1) == Some(&'*') {
            i = skip_block_comment(&c, i);
        } else if ch == '"' {
            i = skip_string(&c, i + 1);
        } else if let Some(end) = raw_string_end(&c, i) {
            i = end;
        } else if ch == '\'' {
            i = skip_char_or_lifetime(&c, i);
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            if (word == "b" || word == "c") && c.get(i) == Some(&'"') {
                i = skip_string(&c, i + 1);
            } else if word == "r" && c.get(i) == Some(&'#') && c.get(i + 1) != Some(&'"') {
                i += 1; // a raw identifier `r#name`: keep `name`
            } else {
                out.push(word);
            }
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push("::".to_string());
            i += 2;
        } else {
            if !ch.is_whitespace() {
                out.push(ch.to_string());
            }
            i += 1;
        }
    }
    out
}

/// The index after the (possibly nested) block comment starting at `i`.
fn skip_block_comment(c: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// The index after the string whose body starts at `i` (after its `"`).
fn skip_string(c: &[char], mut i: usize) -> usize {
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// If a raw string (`r"…"`, `r#"…"#`, `br#"…"#`) starts at `i`, the index after it.
fn raw_string_end(c: &[char], i: usize) -> Option<usize> {
    if i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if c.get(j) == Some(&'b') || c.get(j) == Some(&'c') {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = c[j..].iter().take_while(|&&h| h == '#').count();
    j += hashes;
    if c.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < c.len() {
        if c[j] == '"'
            && c[j + 1..]
                .iter()
                .take(hashes)
                .filter(|&&h| h == '#')
                .count()
                == hashes
        {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(j)
}

/// The index after the character literal or lifetime quote at `i`.
fn skip_char_or_lifetime(c: &[char], i: usize) -> usize {
    if c.get(i + 1) == Some(&'\\') {
        // An escaped character literal: find its closing quote.
        let mut j = i + 2;
        while j < c.len() && c[j] != '\'' {
            j += 1;
        }
        j + 1
    } else if c.get(i + 2) == Some(&'\'') {
        i + 3 // 'x'
    } else {
        i + 1 // a lifetime or label: its name is read as a word
    }
}

/// Parse one use tree starting at `toks[*i]` under `prefix`, adding its paths to `out`.
fn use_tree(
    toks: &[Token],
    i: &mut usize,
    prefix: Vec<String>,
    text: &str,
    out: &mut Vec<UsePath>,
) {
    let mut path = prefix;
    if toks.get(*i).map(String::as_str) == Some("::") {
        *i += 1;
    }
    while let Some(tok) = toks.get(*i) {
        match tok.as_str() {
            "{" => {
                *i += 1;
                while toks.get(*i).is_some_and(|t| t != "}") {
                    use_tree(toks, i, path.clone(), text, out);
                    if toks.get(*i).map(String::as_str) == Some(",") {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            "*" => {
                *i += 1;
                let (segs, name, text) = (path, None, text.to_string());
                let reexport = false;
                out.push(UsePath {
                    segs,
                    name,
                    text,
                    reexport,
                });
                return;
            }
            "}" | "," | ";" => return,
            word => {
                path.push(word.to_string());
                *i += 1;
                if toks.get(*i).map(String::as_str) == Some("::") {
                    *i += 1;
                    continue;
                }
                out.push(named_path(toks, i, path, text));
                return;
            }
        }
    }
}

/// The end of a simple path in a use tree: `self` and `as` aliases.
fn named_path(toks: &[Token], i: &mut usize, mut segs: Vec<String>, text: &str) -> UsePath {
    if segs.last().map(String::as_str) == Some("self") && segs.len() > 1 {
        segs.pop();
    }
    let mut name = segs.last().cloned();
    if toks.get(*i).map(String::as_str) == Some("as") {
        name = toks.get(*i + 1).cloned();
        *i += 2;
    }
    let text = text.to_string();
    UsePath {
        segs,
        name,
        text,
        reexport: false,
    }
}

/// The tokens of the statement from `toks[start]` to its `;`, joined for messages.
fn statement_text(toks: &[Token], start: usize) -> String {
    let end = toks[start..]
        .iter()
        .position(|t| t == ";")
        .map_or(toks.len(), |p| start + p);
    let mut s = String::new();
    for t in &toks[start..end] {
        let glue = s.is_empty() || s.ends_with("::") || s.ends_with('{') || t == "::";
        let glue = glue || t == "," || t == "}" || t == "(" || t == ")" || s.ends_with('(');
        if !glue {
            s.push(' ');
        }
        s.push_str(t);
    }
    s
}

/// Whether `token` is an identifier (or a number).
fn is_word(token: &str) -> bool {
    token.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// Keywords after which the next word names a defined item.
const ITEM_KEYWORDS: [&str; 9] = [
    "fn", "struct", "enum", "trait", "type", "const", "static", "union", "mod",
];

/// Read one file of a crate: its inline modules, definitions and `use`s go
/// into `krate`, under the file's module path `base`.
fn read_file(krate: &mut Crate, file: &str, base: &[String], src: &str) {
    krate.entry(base.to_vec()).or_default().file = file.to_string();
    let mut r = FileReader {
        krate,
        file,
        toks: tokens(src),
        i: 0,
        depth: 0,
        stack: vec![(base.to_vec(), 0)],
    };
    while r.i < r.toks.len() {
        r.step();
    }
}

/// The state of reading one file.
struct FileReader<'a> {
    /// The crate being filled in.
    krate: &'a mut Crate,
    /// The file's workspace-relative path.
    file: &'a str,
    /// Its tokens.
    toks: Vec<Token>,
    /// The next token.
    i: usize,
    /// The brace depth at `i`.
    depth: usize,
    /// The modules open at `i`: the file's, then inline ones, each with the
    /// brace depth inside it.
    stack: Vec<(Vec<String>, usize)>,
}

impl FileReader<'_> {
    /// The token `k` places after the current one, if any.
    fn peek(&self, k: usize) -> Option<&str> {
        self.toks.get(self.i + k).map(String::as_str)
    }

    /// The module open at the current token.
    fn here(&self) -> Vec<String> {
        self.stack.last().expect("the file's module").0.clone()
    }

    /// Whether the current token is directly in a module (not in a
    /// function body or an impl).
    fn at_module_level(&self) -> bool {
        self.stack.last().is_some_and(|(_, d)| *d == self.depth)
    }

    /// Read the current token (and whatever it starts).
    fn step(&mut self) {
        let here = self.here();
        let tok = self.toks[self.i].clone();
        let next = self.peek(1).map(str::to_string);
        if is_word(&tok) {
            let m = self.krate.entry(here.clone()).or_default();
            m.mentions.insert(tok.clone());
        }
        match (tok.as_str(), next.as_deref()) {
            ("{", _) => self.depth += 1,
            ("}", _) => {
                if self.stack.len() > 1 && self.at_module_level() {
                    self.stack.pop();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            ("#", Some("[")) => return self.attribute(),
            ("use", Some(n)) if n != "<" => return self.use_statement(here),
            ("crate" | "super" | "self", Some("::")) if self.starts_path() => {
                return self.inline_path(here);
            }
            // A bare path (`ledger::Outcome`, `Role::Client`): it names a
            // file of the crate when its first segment is a child module
            // or a name a `use` brought into scope (see [`absolute`]).
            (word, Some("::")) if is_word(word) && self.starts_path() => {
                return self.inline_path(here);
            }
            ("mod", Some(name)) if self.peek(2) == Some("{") => {
                let inner = [here.clone(), vec![name.to_string()]].concat();
                self.define(here, name.to_string());
                self.krate.entry(inner.clone()).or_default().file = self.file.to_string();
                self.depth += 1;
                self.stack.push((inner, self.depth));
                self.i += 3;
                return;
            }
            ("macro_rules", Some("!")) => {
                if let Some(name) = self.peek(2).map(str::to_string) {
                    self.define(here, name);
                }
            }
            (kw, Some(name)) if ITEM_KEYWORDS.contains(&kw) && is_word(name) => {
                self.define(here, name.to_string())
            }
            _ => {}
        }
        self.i += 1;
    }

    /// Record that module `module` defines `name`, if directly in it.
    fn define(&mut self, module: Vec<String>, name: String) {
        if self.at_module_level() {
            self.krate.entry(module).or_default().defines.insert(name);
        }
    }

    /// Read the `use` statement at the current token.
    fn use_statement(&mut self, here: Vec<String>) {
        let visibility = self.visibility_start();
        let text = statement_text(&self.toks, visibility.unwrap_or(self.i));
        let reexport = visibility.is_some();
        let mut paths = Vec::new();
        self.i += 1;
        use_tree(&self.toks, &mut self.i, Vec::new(), &text, &mut paths);
        for p in &mut paths {
            p.reexport = reexport;
        }
        self.krate.entry(here).or_default().uses.extend(paths);
    }

    /// Whether the current token starts a path (is not a later segment of
    /// one, as `self` in `super::self` would be).
    fn starts_path(&self) -> bool {
        self.i == 0 || self.toks[self.i - 1] != "::"
    }

    /// Read the inline path (`crate::a::b::f`, `super::x::Y`) at the current
    /// token: its segments up to the first that is not a name (generics,
    /// a call, a brace).
    fn inline_path(&mut self, here: Vec<String>) {
        let start = self.i;
        let mut segs = vec![self.toks[self.i].clone()];
        self.i += 1;
        while self.peek(0) == Some("::") && self.peek(1).is_some_and(is_word) {
            segs.push(self.toks[self.i + 1].clone());
            self.i += 2;
        }
        for t in &self.toks[start..self.i] {
            if is_word(t) {
                let m = self.krate.entry(here.clone()).or_default();
                m.mentions.insert(t.clone());
            }
        }
        if self.peek(0) == Some("!") {
            // A macro call: a `#[macro_export]` macro lives at the crate
            // root whichever file defines it, so the path names no file.
            return;
        }
        let text = self.toks[start..self.i].concat();
        let name = segs.last().cloned();
        let path = UsePath {
            segs,
            name,
            text,
            reexport: false,
        };
        self.krate.entry(here).or_default().inline.push(path);
    }

    /// Where the `pub` or `pub(…)` before the current token starts, if any.
    fn visibility_start(&self) -> Option<usize> {
        let last = self.i.checked_sub(1)?;
        match self.toks[last].as_str() {
            "pub" => Some(last),
            ")" => {
                let open = self.toks[..last].iter().rposition(|t| t == "(")?;
                let pub_at = open.checked_sub(1)?;
                (self.toks[pub_at] == "pub").then_some(pub_at)
            }
            _ => None,
        }
    }

    /// Read the attribute `#[…]` at the current token. The item under
    /// `#[cfg(test)]` is test code: it is skipped, and a module file it
    /// declares is marked test-only.
    fn attribute(&mut self) {
        let start = self.i + 2;
        let len = self.toks[start..]
            .iter()
            .position(|t| t == "]")
            .unwrap_or(self.toks.len() - start);
        let is_test = self.toks[start..start + len] == ["cfg", "(", "test", ")"];
        self.i = start + len + 1;
        if is_test {
            self.skip_test_item();
        }
    }

    /// Skip the item at the current token (after its `#[cfg(test)]`).
    fn skip_test_item(&mut self) {
        while self.peek(0) == Some("#") && self.peek(1) == Some("[") {
            self.attribute();
        }
        let start = self.i;
        while let Some(t) = self.peek(0) {
            match t {
                ";" => break,
                "{" => {
                    self.skip_block();
                    return;
                }
                _ => self.i += 1,
            }
        }
        if let Some(p) = self.toks[start..self.i].iter().position(|t| t == "mod") {
            let name = self.toks[start + p + 1].clone();
            let module = [self.here(), vec![name]].concat();
            self.krate.entry(module).or_default().test_only = true;
        }
        self.i += 1;
    }

    /// Skip the block whose `{` is the current token.
    fn skip_block(&mut self) {
        let mut depth = 0;
        while let Some(t) = self.toks.get(self.i) {
            self.i += 1;
            match t.as_str() {
                "{" => depth += 1,
                "}" if depth == 1 => return,
                "}" => depth -= 1,
                _ => {}
            }
        }
    }
}

/// Where a crate file sits: its crate root file and its module path, for a
/// path like `sim/src/world/mod.rs` (crate `sim/src/lib.rs`, module `world`).
/// A binary under `src/bin/` is a crate of its own.
fn module_of(path: &str) -> Option<(String, Vec<String>)> {
    let (krate, rest) = path.split_once("/src/")?;
    let rest = rest.strip_suffix(".rs")?;
    let mut parts: Vec<String> = rest.split('/').map(str::to_string).collect();
    let mut root = format!("{krate}/src/lib.rs");
    if parts.first().map(String::as_str) == Some("bin") && parts.len() >= 2 {
        root = format!("{krate}/src/bin/{}.rs", parts[1]);
        parts.drain(..2);
    } else if parts == ["lib"] || parts == ["main"] {
        parts.clear();
    }
    if parts.last().map(String::as_str) == Some("mod") {
        parts.pop();
    }
    Some((root, parts))
}

/// The crates of `files` (workspace-relative path, source), by crate root.
fn crates(files: &[(String, String)]) -> BTreeMap<String, Crate> {
    let mut out: BTreeMap<String, Crate> = BTreeMap::new();
    for (path, src) in files {
        if let Some((root, module)) = module_of(path) {
            read_file(out.entry(root).or_default(), path, &module, src);
        }
    }
    out
}

/// The absolute module path `segs` names when written in module `here`;
/// `None` for a path outside the crate (another crate, `std`).
fn absolute(krate: &Crate, here: &[String], segs: &[String]) -> Option<Vec<String>> {
    absolute_from(krate, here, segs, 0)
}

/// [`absolute`], `depth` names deep into the `use`s that brought a bare
/// path's first segment into scope.
fn absolute_from(
    krate: &Crate,
    here: &[String],
    segs: &[String],
    depth: usize,
) -> Option<Vec<String>> {
    let first = segs.first()?.as_str();
    match first {
        "crate" => Some(segs[1..].to_vec()),
        "self" => Some([here, &segs[1..]].concat()),
        "super" => {
            let ups = segs.iter().take_while(|s| *s == "super").count();
            let base = here.get(..here.len().checked_sub(ups)?)?;
            Some([base, &segs[ups..]].concat())
        }
        _ => {
            // A bare path starts at a name in scope: a child module here,
            // or a name a `use` of this module brought in (a sibling
            // module, an item), which stands for the path it was brought
            // from.
            let child = [here, &segs[..1]].concat();
            if krate.contains_key(&child) {
                return Some([here, segs].concat());
            }
            let used = krate
                .get(here)?
                .uses
                .iter()
                .find(|u| u.name.as_deref() == Some(first) && u.segs.len() > 1)?;
            let path = [used.segs.as_slice(), &segs[1..]].concat();
            match depth < MAX_REEXPORT_DEPTH {
                true => absolute_from(krate, here, &path, depth + 1),
                false => None,
            }
        }
    }
}

/// The file that defines what `segs` (written in module `here`) names, or
/// `None` if it lies outside the crate.
fn resolve(krate: &Crate, here: &[String], segs: &[String], depth: usize) -> Option<String> {
    let abs = absolute(krate, here, segs)?;
    let mut len = abs.len();
    while len > 0 && !krate.contains_key(&abs[..len]) {
        len -= 1;
    }
    let module = &abs[..len];
    let m = krate.get(module)?;
    match abs.get(len) {
        Some(name) if depth < MAX_REEXPORT_DEPTH => {
            Some(defining_file(krate, module, name, depth).unwrap_or_else(|| m.file.clone()))
        }
        _ => Some(m.file.clone()),
    }
}

/// Follow `name` from `module` through its re-exports to the file that
/// defines it; `None` when the module defines it (or nothing better is known).
fn defining_file(krate: &Crate, module: &[String], name: &str, depth: usize) -> Option<String> {
    let m = krate.get(module)?;
    if m.defines.contains(name) {
        return None;
    }
    if let Some(u) = m.uses.iter().find(|u| u.name.as_deref() == Some(name)) {
        // A name from outside the crate is in no file of it.
        return resolve(krate, module, &u.segs, depth + 1).or_else(|| Some(String::new()));
    }
    for glob in m.uses.iter().filter(|u| u.name.is_none()) {
        let Some(target) = absolute(krate, module, &glob.segs) else {
            continue;
        };
        let Some(t) = krate.get(&target) else {
            continue;
        };
        let reexported = t.uses.iter().any(|u| u.name.as_deref() == Some(name));
        if t.defines.contains(name) || reexported {
            let path = [target, vec![name.to_string()]].concat();
            return resolve(
                krate,
                &[],
                &[vec!["crate".to_string()], path].concat(),
                depth + 1,
            );
        }
    }
    None
}

/// Every import of one file by another in `krate`.
fn edges(krate: &Crate) -> BTreeSet<Edge> {
    let mut out = BTreeSet::new();
    for (module, m) in krate {
        let test_only =
            (0..=module.len()).any(|n| krate.get(&module[..n]).is_some_and(|p| p.test_only));
        // A re-export the module's own code never names only passes the
        // name on: whoever imports it is followed to the defining file.
        // A glob re-export (`pub use x::*`) passes its names on likewise.
        let passes_on =
            |u: &UsePath| u.reexport && u.name.as_ref().is_none_or(|n| !m.mentions.contains(n));
        let imports = m.uses.iter().filter(|u| !passes_on(u)).chain(&m.inline);
        for u in imports.filter(|_| !test_only) {
            let Some(to) = resolve(krate, module, &u.segs, 0) else {
                continue;
            };
            if !to.is_empty() && to != m.file {
                let (from, via) = (m.file.clone(), u.text.clone());
                out.insert(Edge { from, to, via });
            }
        }
    }
    out
}

/// The files of one import circle (a strongly connected component of a
/// crate's file-level import graph), in path order: the key a circle is
/// known by.
type Circle = Vec<String>;

/// A crate's imports: importing file, imported file, and the first `use`
/// that makes the import.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// Every import circle of every crate of `files`: each strongly connected
/// component of more than one file, with a message naming its files and
/// its shortest loop.
fn circles(files: &[(String, String)]) -> BTreeMap<Circle, String> {
    let mut out = BTreeMap::new();
    for krate in crates(files).values() {
        let mut graph = Graph::new();
        for e in edges(krate) {
            let targets = graph.entry(e.from).or_default();
            targets.entry(e.to).or_insert(e.via);
        }
        for circle in components(&graph) {
            let msg = describe(&graph, &circle);
            out.insert(circle, msg);
        }
    }
    out
}

/// The state of Tarjan's strongly-connected-components search.
struct Tarjan<'g> {
    /// The graph searched.
    graph: &'g Graph,
    /// Each visited file's visiting order.
    index: BTreeMap<&'g str, usize>,
    /// The lowest visiting order each file reaches.
    low: BTreeMap<&'g str, usize>,
    /// The files visited whose component is not yet closed.
    stack: Vec<&'g str>,
    /// The components of more than one file found so far.
    out: Vec<Circle>,
}

impl<'g> Tarjan<'g> {
    /// The files `v` imports.
    fn targets(&self, v: &str) -> Vec<&'g str> {
        let graph = self.graph;
        graph
            .get(v)
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// Visit `v` and everything it reaches, closing the components rooted there.
    fn visit(&mut self, v: &'g str) {
        let order = self.index.len();
        self.index.insert(v, order);
        self.low.insert(v, order);
        self.stack.push(v);
        for w in self.targets(v) {
            let reach = match self.index.get(w) {
                None => {
                    self.visit(w);
                    self.low[w]
                }
                Some(&i) if self.stack.contains(&w) => i,
                Some(_) => continue,
            };
            let low = self.low.get_mut(v).expect("visited");
            *low = (*low).min(reach);
        }
        if self.low[v] == self.index[v] {
            let at = self
                .stack
                .iter()
                .rposition(|&s| s == v)
                .expect("on the stack");
            let mut circle: Circle = self.stack.drain(at..).map(str::to_string).collect();
            if circle.len() > 1 {
                circle.sort();
                self.out.push(circle);
            }
        }
    }
}

/// The strongly connected components of `graph` of more than one file,
/// each in path order, in the order of their first file.
fn components(graph: &Graph) -> Vec<Circle> {
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out.sort();
    t.out
}

/// The shortest path from `start` back to itself through files of
/// `inside`: the files in order, `start` first.
fn loop_through<'a>(graph: &'a Graph, inside: &[String], start: &'a str) -> Option<Vec<String>> {
    let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for w in graph.get(v).into_iter().flat_map(|m| m.keys()) {
            if w == start {
                let mut path = vec![v.to_string()];
                let mut at = v;
                while at != start {
                    at = parent[at];
                    path.push(at.to_string());
                }
                path.reverse();
                return Some(path);
            }
            if inside.contains(w) && !parent.contains_key(w.as_str()) {
                parent.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    None
}

/// The shortest loop inside `circle` (the first in path order among the
/// shortest): the files in order, each importing the next and the last
/// importing the first.
fn shortest_loop(graph: &Graph, circle: &[String]) -> Vec<String> {
    let mut best: Option<Vec<String>> = None;
    for start in circle {
        if let Some(path) = loop_through(graph, circle, start)
            && best.as_ref().is_none_or(|b| path.len() < b.len())
        {
            best = Some(path);
        }
    }
    best.unwrap_or_default()
}

/// A circle's message: its files, then its shortest loop import by import
/// (cutting one of those imports breaks that loop).
fn describe(graph: &Graph, circle: &[String]) -> String {
    let mut msg = format!(
        "{} files import each other: {}\n  shortest loop (cut one of its imports):",
        circle.len(),
        circle.join(", ")
    );
    let path = shortest_loop(graph, circle);
    for (i, from) in path.iter().enumerate() {
        let to = &path[(i + 1) % path.len()];
        msg.push_str(&format!(
            "\n    {from} imports {to} (`{}`)",
            graph[from][to]
        ));
    }
    msg
}

/// The verdict on `found` circles given the `allowed` ones: every circle
/// not allowed, and every allowed one no longer found, named.
fn verdict(found: &BTreeMap<Circle, String>, allowed: &[Allowed]) -> Result<(), String> {
    let allows = |c: &Circle| allowed.iter().any(|x| x.files == c.as_slice());
    let mut problems: Vec<String> = found
        .iter()
        .filter(|(c, _)| !allows(c))
        .map(|(_, msg)| format!("import circle: {msg}"))
        .collect();
    for x in allowed {
        if !found.keys().any(|c| x.files == c.as_slice()) {
            problems.push(format!(
                "allowed circle {} is gone ({}): remove it from ALLOWED",
                x.files.join(" <-> "),
                x.reason
            ));
        }
    }
    match problems.is_empty() {
        true => Ok(()),
        false => Err(problems.join("\n")),
    }
}

/// Every `.rs` file under `dir`, recursively, in path order.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The workspace's crate files: (workspace-relative path, source).
fn workspace_files() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for krate in CRATES {
        let mut paths = Vec::new();
        rust_files(&root.join(krate).join("src"), &mut paths);
        for p in paths {
            let rel = p.strip_prefix(&root).expect("under the root");
            let rel = rel.to_string_lossy().replace('\\', "/");
            let src = std::fs::read_to_string(&p)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
            out.push((rel, src));
        }
    }
    out
}

#[test]
fn no_files_of_a_crate_import_each_other_in_a_circle() {
    let found = circles(&workspace_files());
    if let Err(problems) = verdict(&found, ALLOWED) {
        panic!("{problems}");
    }
}

#[test]
fn the_scan_sees_the_workspace_imports() {
    // A reader that saw no imports would find no circles: it must see these.
    let files = workspace_files();
    let all = crates(&files);
    let sim = edges(&all["sim/src/lib.rs"]);
    let has = |from: &str, to: &str| sim.iter().any(|e| e.from == from && e.to == to);
    // `use crate::world::port::Port`, a plain path.
    assert!(has(
        "sim/src/percolator/nodes/client.rs",
        "sim/src/world/port.rs"
    ));
    // `use workload::PulsarWorkload` in a parent: a bare path from a child module.
    assert!(has("sim/src/pulsar/mod.rs", "sim/src/pulsar/workload.rs"));
    // `use super::nodes::client::Client`.
    assert!(has(
        "sim/src/percolator/system.rs",
        "sim/src/percolator/nodes/client.rs"
    ));
    // `use crate::world::{BoxFuture, …}`, followed through the re-export
    // in `world/mod.rs` to the file that defines it.
    assert!(has(
        "sim/src/percolator/system.rs",
        "sim/src/world/system.rs"
    ));
    assert!(files.len() > 100, "{} files read", files.len());
}

/// A tiny crate `demo` from (file under `demo/src/`, source) pairs.
fn demo(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(p, s)| (format!("demo/src/{p}"), s.to_string()))
        .collect()
}

/// The circles of `files`, as lists of file names under `demo/src/`.
fn demo_circles(files: &[(&str, &str)]) -> Vec<Vec<String>> {
    let strip = |p: &String| p.trim_start_matches("demo/src/").to_string();
    circles(&demo(files))
        .into_keys()
        .map(|c| c.iter().map(strip).collect())
        .collect()
}

/// A circle of two demo files.
fn pair(a: &str, b: &str) -> Vec<String> {
    vec![a.to_string(), b.to_string()]
}

#[test]
fn a_planted_circle_is_found_and_named() {
    let files = [
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("a.rs", "use crate::b::{Bee, self};\npub struct Ay;\n"),
        ("b.rs", "use crate::a::Ay as Other;\npub struct Bee;\n"),
        ("c.rs", "use crate::a::Ay;\n"),
    ];
    assert_eq!(demo_circles(&files), vec![pair("a.rs", "b.rs")]);
    let found = circles(&demo(&files));
    let err = verdict(&found, &[]).expect_err("a circle fails");
    assert!(err.contains("demo/src/a.rs imports demo/src/b.rs"), "{err}");
    assert!(err.contains("`use crate::b::{Bee, self}`"), "{err}");
}

#[test]
fn super_self_groups_and_mod_rs_files_are_resolved() {
    let files = [
        ("lib.rs", "pub mod x;\n"),
        ("x/mod.rs", "mod p;\nmod q;\npub use self::q::Queue;\n"),
        (
            "x/p.rs",
            "use super::{q::{Queue, other::*}};\npub fn pee() {}\n",
        ),
        ("x/q/mod.rs", "pub mod other;\npub struct Queue;\n"),
        ("x/q/other.rs", "use crate::x::p::pee;\n"),
    ];
    assert_eq!(demo_circles(&files), vec![pair("x/p.rs", "x/q/other.rs")]);
}

#[test]
fn a_child_using_an_item_its_parent_defines_imports_the_parent() {
    let files = [
        ("lib.rs", "mod m;\n"),
        (
            "m/mod.rs",
            "mod kid;\nuse kid::Kid;\npub struct Parent(Kid);\n",
        ),
        ("m/kid.rs", "use super::Parent;\npub struct Kid;\n"),
    ];
    assert_eq!(demo_circles(&files), vec![pair("m/kid.rs", "m/mod.rs")]);
}

#[test]
fn declaring_or_re_exporting_children_is_not_a_circle() {
    let files = [
        ("lib.rs", "mod m;\npub use m::Kid;\n"),
        (
            "m/mod.rs",
            "mod kid;\nmod other;\npub use kid::Kid;\npub(crate) use other::*;\npub struct Hub;\n",
        ),
        // `super::Thing` only passes through `m/mod.rs`; `Hub` is defined there.
        ("m/kid.rs", "use super::{Hub, Thing};\npub struct Kid;\n"),
        ("m/other.rs", "use crate::Kid;\npub struct Thing;\n"),
    ];
    // kid.rs -> other.rs (through the glob) and other.rs -> kid.rs (through
    // two re-exports): a real circle. kid.rs -> m/mod.rs (Hub), but m/mod.rs
    // only re-exports Kid: no circle there.
    assert_eq!(demo_circles(&files), vec![pair("m/kid.rs", "m/other.rs")]);
    // Once m/mod.rs's own code names Kid, it imports kid.rs.
    let mut named = files;
    named[1].1 = "mod kid;\nmod other;\npub use kid::Kid;\npub struct Hub(Kid);\n";
    named[2].1 = "use super::Hub;\npub struct Kid;\n";
    let found = circles(&demo(&named));
    assert_eq!(found.len(), 1, "{found:?}");
    let msg = found.values().next().expect("one circle");
    assert!(msg.contains("(`pub use kid::Kid`)"), "{msg}");
    assert!(
        msg.contains("demo/src/m/mod.rs imports demo/src/m/kid.rs"),
        "{msg}"
    );
}

#[test]
fn inline_test_modules_belong_to_their_file() {
    let files = [
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "pub fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::b::g;\n}\n",
        ),
        ("b.rs", "pub fn g() {}\n"),
    ];
    assert!(demo_circles(&files).is_empty());
}

#[test]
fn comments_strings_and_lifetimes_hide_no_imports_and_invent_none() {
    let files = [
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "// use crate::b::B;\n/* use crate::b::B; /* nested */ */\n\
             const S: &str = \"use crate::b::B;\";\nconst R: &str = r#\"use crate::b::B;\"#;\n\
             fn f<'a>(x: &'a str) -> impl Sized + use<'a> { let _c = '{'; x }\npub struct A;\n",
        ),
        ("b.rs", "use crate::a::A;\npub struct B;\n"),
    ];
    assert!(demo_circles(&files).is_empty());
    let mut planted = files;
    planted[1].1 = "fn f() { let _c = '}'; }\nuse crate::b::B;\npub struct A;\n";
    assert_eq!(demo_circles(&planted), vec![pair("a.rs", "b.rs")]);
}

#[test]
fn an_allowed_circle_passes_and_a_stale_allowance_fails() {
    let files = [
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "use crate::b::B;\npub struct A;\n"),
        ("b.rs", "use crate::a::A;\npub struct B;\n"),
    ];
    let found = circles(&demo(&files));
    let allowed = [Allowed {
        files: &["demo/src/a.rs", "demo/src/b.rs"],
        reason: "test",
    }];
    assert_eq!(verdict(&found, &allowed), Ok(()));
    let err = verdict(&BTreeMap::new(), &allowed).expect_err("a stale allowance fails");
    assert!(
        err.contains("demo/src/a.rs <-> demo/src/b.rs is gone"),
        "{err}"
    );
}

#[test]
fn a_longer_circle_is_found_with_its_shortest_loop() {
    // a -> b -> c -> a is a circle; e imports a but nothing imports e, and
    // d imports nothing: neither is part of it.
    let files = [
        ("lib.rs", "mod a;\nmod b;\nmod c;\nmod d;\nmod e;\n"),
        ("a.rs", "use crate::b::B;\npub struct A;\n"),
        ("b.rs", "use crate::c::C;\npub struct B;\n"),
        ("c.rs", "use crate::a::A;\npub struct C;\n"),
        ("d.rs", "pub struct D;\n"),
        ("e.rs", "use crate::a::A;\n"),
    ];
    let three = ["a.rs", "b.rs", "c.rs"].map(String::from).to_vec();
    assert_eq!(demo_circles(&files), vec![three]);
    let found = circles(&demo(&files));
    let err = verdict(&found, &[]).expect_err("a three-file circle fails");
    for step in [
        "demo/src/a.rs imports demo/src/b.rs (`use crate::b::B`)",
        "demo/src/b.rs imports demo/src/c.rs (`use crate::c::C`)",
        "demo/src/c.rs imports demo/src/a.rs (`use crate::a::A`)",
    ] {
        assert!(err.contains(step), "{err}");
    }
    assert!(!err.contains("e.rs"), "{err}");
    // A shortcut back from b to a makes the shortest loop a pair, inside
    // the same three-file component.
    let mut shortcut = files;
    shortcut[2].1 = "use crate::c::C;\nuse crate::a::A;\npub struct B;\n";
    let found = circles(&demo(&shortcut));
    assert_eq!(found.len(), 1, "{found:?}");
    let msg = found.values().next().expect("one circle");
    assert!(msg.starts_with("3 files import each other"), "{msg}");
    assert_eq!(msg.matches(" imports ").count(), 2, "{msg}");
    assert!(msg.contains("demo/src/b.rs imports demo/src/a.rs"), "{msg}");
}

#[test]
fn a_circle_made_only_of_inline_paths_is_found() {
    let files = [
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        (
            "a.rs",
            "pub fn f() -> u32 { crate::b::g::<u32>() + 1 }\npub struct Ay;\n",
        ),
        (
            "b/mod.rs",
            "pub mod inner;\npub fn g<T>() -> u32 { let _ = super::a::Ay; 0 }\n",
        ),
        ("b/inner.rs", "pub fn h() { self::k(); }\nfn k() {}\n"),
        (
            "c.rs",
            "pub fn c() -> u32 { crate::a::f() }\n// crate::b::g() in a comment\n",
        ),
    ];
    assert_eq!(demo_circles(&files), vec![pair("a.rs", "b/mod.rs")]);
    let found = circles(&demo(&files));
    let err = verdict(&found, &[]).expect_err("a circle fails");
    assert!(err.contains("crate::b::g"), "{err}");
    assert!(err.contains("super::a::Ay"), "{err}");
    // Without the inline paths there is no circle.
    let used = [
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "pub fn f() -> u32 { 1 }\npub struct Ay;\n"),
        ("b.rs", "pub fn g() -> u32 { let _ = super::a::Ay; 0 }\n"),
    ];
    assert!(demo_circles(&used).is_empty());
}

#[test]
fn bare_paths_through_a_child_or_a_used_sibling_are_imports() {
    // `ledger::Outcome` in the parent names the child; the child's
    // `txn::Tx` names a sibling the `use super::txn` brought into scope,
    // and `shape::Round` a grandchild of it through that sibling.
    let files = [
        (
            "lib.rs",
            "mod client;\npub fn f() -> u32 { client::ledger::count() }\n",
        ),
        (
            "client/mod.rs",
            "pub mod ledger;\npub mod txn;\npub fn g() -> ledger::Outcome { ledger::Outcome }\n",
        ),
        (
            "client/ledger.rs",
            "use super::txn;\npub struct Outcome;\npub fn count() -> u32 { let _ = txn::shape::Round; 0 }\n",
        ),
        ("client/txn/mod.rs", "pub mod shape;\n"),
        (
            "client/txn/shape.rs",
            "pub struct Round;\npub fn h() { let _ = crate::client::g(); }\n",
        ),
    ];
    assert_eq!(
        demo_circles(&files),
        vec![vec![
            "client/ledger.rs".to_string(),
            "client/mod.rs".to_string(),
            "client/txn/shape.rs".to_string(),
        ]]
    );
    // Written with `Outcome` alone (no path), the parent imports nothing
    // of its child, and the circle is gone.
    let mut cut = files;
    cut[1].1 = "pub mod ledger;\npub mod txn;\npub fn g() -> u32 { 0 }\n";
    assert!(demo_circles(&cut).is_empty());
}
