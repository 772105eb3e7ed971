//! One source file of `src/` as the rules see it: parsed by `syn`, its `#[cfg(test)]` items
//! removed, and the facts the rules need gathered in one walk over the syntax tree.

use std::path::{Path, PathBuf};

use proc_macro2::{Delimiter, LineColumn, TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;

pub struct Source {
    /// Path relative to `src/`.
    pub rel: PathBuf,
    pub facts: Facts,
}

/// What the rules check, gathered from the non-test code of one file.
#[derive(Default)]
pub struct Facts {
    /// Functions with a body: name, first line (`fn`) and last line (closing brace).
    pub fns: Vec<FnSpan>,
    /// Lines of signatures returning `Result<_, String>`.
    pub string_errors: Vec<usize>,
    /// Every path the code names (uses, types, expressions, macro bodies), as written.
    pub paths: Vec<NamedPath>,
    /// Lines of `pub enum`s without `#[non_exhaustive]`.
    pub open_enums: Vec<usize>,
    pub release_asserts: usize,
    pub debug_asserts: usize,
    /// Lines holding code (not blank, not a comment, not a doc comment).
    pub code_lines: usize,
}

pub struct FnSpan {
    pub name: String,
    pub start: usize,
    pub end: usize,
}

impl FnSpan {
    pub fn lines(&self) -> usize {
        self.end - self.start + 1
    }
}

/// A path's segments as written (`crate`, `super`, `self` kept) and the module it was
/// written in, relative to the file's own module (inline `mod` blocks).
pub struct NamedPath {
    pub segments: Vec<String>,
    pub inline_mods: Vec<String>,
    pub line: usize,
}

impl Source {
    pub fn parse(rel: &str, text: &str) -> Source {
        let mut file =
            syn::parse_file(text).unwrap_or_else(|e| panic!("src/{rel} does not parse: {e}"));
        DropTestItems.visit_file_mut(&mut file);
        let mut facts = Facts {
            code_lines: code_lines(&quote_tokens(&file)),
            ..Facts::default()
        };
        Walker {
            facts: &mut facts,
            inline_mods: Vec::new(),
        }
        .visit_file(&file);
        Source {
            rel: PathBuf::from(rel),
            facts,
        }
    }

    /// The folder (or root file) the module belongs to: its floor's name.
    pub fn unit(&self) -> String {
        self.module_path()[0].clone()
    }

    pub fn in_unit(&self, units: &[&str]) -> bool {
        units.contains(&self.unit().as_str())
    }

    pub fn in_folder(&self) -> bool {
        self.rel.components().count() > 1
    }

    /// The file's module path from the crate root: `shard/runtime.rs` is `shard::runtime`,
    /// `shard/mod.rs` is `shard`, a root file such as `lib.rs` is `lib`.
    pub fn module_path(&self) -> Vec<String> {
        let mut parts: Vec<String> = self
            .rel
            .components()
            .map(|c| {
                c.as_os_str()
                    .to_string_lossy()
                    .trim_end_matches(".rs")
                    .to_string()
            })
            .collect();
        if parts.len() > 1 && parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        parts
    }

    /// The crate-absolute module path a written path names (`crate::`, `super::`, `self::`
    /// resolved against where it was written), or `None` for a path outside the crate.
    pub fn resolve(&self, path: &NamedPath) -> Option<Vec<String>> {
        let mut here = self.module_path();
        if !self.in_folder() {
            here.clear(); // a root file's `super` and `self` are the crate root
        }
        here.extend(path.inline_mods.iter().cloned());
        let mut segments = path.segments.iter().peekable();
        let mut base = match segments.peek().map(|s| s.as_str()) {
            Some("crate") => Vec::new(),
            Some("super") | Some("self") => here,
            _ => return None,
        };
        if path.segments[0] == "crate" {
            segments.next();
        }
        while let Some(s) = segments.next_if(|s| *s == "super" || *s == "self") {
            if s == "super" {
                base.pop()?;
            }
        }
        base.extend(segments.cloned());
        Some(base)
    }
}

/// Every `.rs` file under `root`, parsed.
pub fn load(root: &Path) -> Vec<Source> {
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    out
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<Source>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .to_string();
            out.push(Source::parse(&rel, &text));
        }
    }
}

/// Removes every item marked `#[cfg(test)]`: modules, functions, impls and their members.
struct DropTestItems;

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && matches!(&a.meta, syn::Meta::List(l) if l.tokens.to_string() == "test")
    })
}

impl VisitMut for DropTestItems {
    fn visit_file_mut(&mut self, file: &mut syn::File) {
        file.items.retain(|i| !is_test_only(item_attrs(i)));
        syn::visit_mut::visit_file_mut(self, file);
    }

    fn visit_item_mod_mut(&mut self, m: &mut syn::ItemMod) {
        if let Some((_, items)) = &mut m.content {
            items.retain(|i| !is_test_only(item_attrs(i)));
        }
        syn::visit_mut::visit_item_mod_mut(self, m);
    }

    fn visit_item_impl_mut(&mut self, i: &mut syn::ItemImpl) {
        i.items.retain(|member| match member {
            syn::ImplItem::Fn(f) => !is_test_only(&f.attrs),
            syn::ImplItem::Const(c) => !is_test_only(&c.attrs),
            syn::ImplItem::Type(t) => !is_test_only(&t.attrs),
            _ => true,
        });
        syn::visit_mut::visit_item_impl_mut(self, i);
    }

    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        b.stmts.retain(|s| match s {
            syn::Stmt::Item(item) => !is_test_only(item_attrs(item)),
            _ => true,
        });
        syn::visit_mut::visit_block_mut(self, b);
    }
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item::*;
    match item {
        Const(i) => &i.attrs,
        Enum(i) => &i.attrs,
        ExternCrate(i) => &i.attrs,
        Fn(i) => &i.attrs,
        ForeignMod(i) => &i.attrs,
        Impl(i) => &i.attrs,
        Macro(i) => &i.attrs,
        Mod(i) => &i.attrs,
        Static(i) => &i.attrs,
        Struct(i) => &i.attrs,
        Trait(i) => &i.attrs,
        TraitAlias(i) => &i.attrs,
        Type(i) => &i.attrs,
        Union(i) => &i.attrs,
        Use(i) => &i.attrs,
        _ => &[],
    }
}

fn quote_tokens(file: &syn::File) -> TokenStream {
    let mut tokens = TokenStream::new();
    quote::ToTokens::to_tokens(file, &mut tokens);
    tokens
}

/// The lines a token starts or a group closes on, doc comments (`#[doc = ..]`) left out.
fn code_lines(tokens: &TokenStream) -> usize {
    let mut lines = std::collections::BTreeSet::new();
    collect_lines(tokens.clone(), &mut lines);
    lines.len()
}

fn collect_lines(tokens: TokenStream, lines: &mut std::collections::BTreeSet<usize>) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < trees.len() {
        if let Some(skip) = doc_attribute_len(&trees[i..]) {
            i += skip;
            continue;
        }
        match &trees[i] {
            TokenTree::Group(g) => {
                lines.insert(g.span_open().start().line);
                lines.insert(g.span_close().start().line);
                collect_lines(g.stream(), lines);
            }
            other => {
                lines.insert(other.span().start().line);
            }
        }
        i += 1;
    }
}

/// The number of tokens of a doc attribute (`#` `[doc = ..]`, or `#` `!` `[doc = ..]`)
/// starting `trees`, if one does.
fn doc_attribute_len(trees: &[TokenTree]) -> Option<usize> {
    let TokenTree::Punct(hash) = trees.first()? else {
        return None;
    };
    if hash.as_char() != '#' {
        return None;
    }
    let bang = matches!(trees.get(1), Some(TokenTree::Punct(p)) if p.as_char() == '!');
    let at = if bang { 2 } else { 1 };
    let TokenTree::Group(g) = trees.get(at)? else {
        return None;
    };
    let first = g.stream().into_iter().next();
    let is_doc = g.delimiter() == Delimiter::Bracket
        && matches!(first, Some(TokenTree::Ident(i)) if i == "doc");
    is_doc.then_some(at + 1)
}

/// One walk over a file's syntax tree that fills its [`Facts`].
struct Walker<'a> {
    facts: &'a mut Facts,
    inline_mods: Vec<String>,
}

impl Walker<'_> {
    fn function(&mut self, sig: &syn::Signature, body: &syn::Block) {
        let start = line(sig.fn_token.span.start());
        self.facts.fns.push(FnSpan {
            name: sig.ident.to_string(),
            start,
            end: line(body.brace_token.span.close().start()),
        });
        self.signature(sig);
    }

    fn signature(&mut self, sig: &syn::Signature) {
        if let syn::ReturnType::Type(_, ty) = &sig.output {
            if is_string_result(ty) {
                self.facts
                    .string_errors
                    .push(line(sig.fn_token.span.start()));
            }
        }
    }

    fn named(&mut self, segments: Vec<String>, line: usize) {
        self.facts.paths.push(NamedPath {
            segments,
            inline_mods: self.inline_mods.clone(),
            line,
        });
    }

    /// An assertion macro by name; then its arguments are walked like code where they
    /// parse as expressions (`assert!`, `format!`, `vec!`), else scanned for paths.
    fn mac(&mut self, mac: &syn::Macro) {
        let name = mac.path.segments.last().map(|s| s.ident.to_string());
        match name.as_deref() {
            Some("assert" | "assert_eq" | "assert_ne") => self.facts.release_asserts += 1,
            Some("debug_assert" | "debug_assert_eq" | "debug_assert_ne") => {
                self.facts.debug_asserts += 1
            }
            _ => {}
        }
        let args = Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        match mac.parse_body_with(args) {
            Ok(exprs) => exprs.iter().for_each(|e| self.visit_expr(e)),
            Err(_) => scan_paths(mac.tokens.clone(), &mut |segments, at| {
                self.named(segments, at)
            }),
        }
    }
}

fn line(at: LineColumn) -> usize {
    at.line
}

/// `Result<_, String>` (any path ending in `Result`).
fn is_string_result(ty: &syn::Type) -> bool {
    let syn::Type::Path(p) = ty else { return false };
    let Some(last) = p.path.segments.last() else {
        return false;
    };
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    let types: Vec<&syn::Type> = args
        .args
        .iter()
        .filter_map(|a| match a {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .collect();
    last.ident == "Result"
        && types.len() == 2
        && matches!(types[1], syn::Type::Path(e) if e.path.is_ident("String"))
}

/// Every path (`a::b::c`, two segments or more, or starting `crate`/`super`/`self`) in
/// tokens that do not parse as code.
fn scan_paths(tokens: TokenStream, found: &mut dyn FnMut(Vec<String>, usize)) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < trees.len() {
        match &trees[i] {
            TokenTree::Group(g) => scan_paths(g.stream(), found),
            TokenTree::Ident(first) => {
                let mut segments = vec![first.to_string()];
                while let (
                    Some(TokenTree::Punct(a)),
                    Some(TokenTree::Punct(b)),
                    Some(TokenTree::Ident(next)),
                ) = (trees.get(i + 1), trees.get(i + 2), trees.get(i + 3))
                {
                    if a.as_char() != ':' || b.as_char() != ':' {
                        break;
                    }
                    segments.push(next.to_string());
                    i += 3;
                }
                if segments.len() > 1 {
                    found(segments, first.span().start().line);
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// A `use` tree flattened into the paths it names (`use a::{b, c::d}` names `a::b`, `a::c::d`).
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => out.push(with(prefix, &n.ident)),
        syn::UseTree::Rename(r) => out.push(with(prefix, &r.ident)),
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_paths(t, prefix, out)),
    }
}

fn with(prefix: &[String], last: &syn::Ident) -> Vec<String> {
    let mut path = prefix.to_vec();
    if last != "self" {
        path.push(last.to_string());
    }
    path
}

impl<'ast> Visit<'ast> for Walker<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.function(&f.sig, &f.block);
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.function(&f.sig, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        match &f.default {
            Some(body) => self.function(&f.sig, body),
            None => self.signature(&f.sig),
        }
        syn::visit::visit_trait_item_fn(self, f);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.inline_mods.push(m.ident.to_string());
        syn::visit::visit_item_mod(self, m);
        self.inline_mods.pop();
    }

    fn visit_item_enum(&mut self, e: &'ast syn::ItemEnum) {
        let public = matches!(e.vis, syn::Visibility::Public(_));
        let closed = e.attrs.iter().any(|a| a.path().is_ident("non_exhaustive"));
        if public && !closed {
            self.facts.open_enums.push(line(e.enum_token.span.start()));
        }
        syn::visit::visit_item_enum(self, e);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_paths(&u.tree, &mut Vec::new(), &mut paths);
        let at = line(u.use_token.span.start());
        paths.into_iter().for_each(|p| self.named(p, at));
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.named(segments, line(p.span().start()));
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.mac(m);
        syn::visit::visit_macro(self, m);
    }
}
