//! The asset graph and its store, after openshift-install's
//! `pkg/asset/store/store.go` (openshift/installer).
//!
//! Each node is a type implementing [`Asset`]: a stable state key (the Go type
//! name openshift-install uses, so state files read alike), a display name for
//! log lines, its direct parents and a pure `generate`. Writable assets also
//! list the files they persist and can load a user's copy from the directory.
//!
//! Fetching a target walks the graph depth-first twice:
//! 1. **load**: for every asset, look for a copy on disk and in the state file.
//!    A parent that is dirty (came from disk, or has a dirty parent) forces
//!    regeneration and discards the on-disk copy with a warning; otherwise an
//!    on-disk copy that differs from the state wins and makes every descendant
//!    dirty; otherwise the state copy is used; otherwise the asset is generated.
//! 2. **fetch**: generate what has no source yet, parents first, each once.
//!
//! After every target of the command was fetched, the whole state is saved
//! atomically and every asset that was read from disk but is not a target of
//! the command is purged from disk ("Consuming Install Config from target
//! directory"): that is how `create manifests` consumes `install-config.yaml`.
//! A command that fails while fetching writes no state and consumes nothing.

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::{debug, info, warn};

use crate::ctx::GenCtx;
use crate::dir::{AssetDir, AssetFile, FILE_MODE, write_atomic};
use crate::error::AssetError;

/// File name of the state file inside the asset directory.
pub const STATE_FILE: &str = ".openshift_install_state.json";

/// One node of the install graph (openshift/installer `pkg/asset/asset.go`).
pub trait Asset: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// Display name used in log lines, e.g. `Install Config` (openshift/installer `pkg/asset/store/store.go`).
    const NAME: &'static str;
    /// Key in `.openshift_install_state.json`, the Go type name, e.g.
    /// `*installconfig.InstallConfig`. Never rename it.
    const STATE_KEY: &'static str;
    /// How many RSA keys `generate` takes from the context (for the key pool).
    const KEYS: usize = 0;
    /// True for assets with files in the directory (targets and consumable inputs).
    const WRITABLE: bool = false;

    /// Direct parents only, e.g. `vec![dep::<InstallConfig>(), dep::<RootCa>()]`.
    fn dependencies() -> Vec<Dep>;

    /// Builds the asset from its parents. Pure apart from `ctx`'s clock and keys.
    fn generate(ctx: &GenCtx, parents: &Parents<'_>) -> Result<Self, AssetError>;

    /// Files persisted to the directory (relative paths). Empty for non-writable assets.
    fn files(&self) -> Vec<AssetFile> {
        Vec::new()
    }

    /// Loads a user-provided or user-edited copy from the directory; `None` if absent.
    fn load(_dir: &AssetDir, _ctx: &GenCtx) -> Result<Option<Self>, AssetError> {
        Ok(None)
    }

    /// The value this run was given on the command line, if the asset is one
    /// (the release image, `installconfig::ReleaseImage`). When the state
    /// file holds another value, the given one wins and counts as dirty, so
    /// every asset depending on it is regenerated and on-disk copies of
    /// those are discarded with openshift-install's warning.
    fn given(_ctx: &GenCtx) -> Option<Self> {
        None
    }

    /// The log line when a given value replaces the state file's `old`.
    fn describe_change(&self, _old: &Self) -> String {
        format!("{} differs from the state file's", Self::NAME)
    }

    /// Checks a copy read from the state file against this run's context
    /// (the install-config against the rules of the target release, which
    /// may differ from the release it was recorded under). Default: nothing.
    fn recheck(&self, _ctx: &GenCtx) -> Result<(), AssetError> {
        Ok(())
    }

    /// Whether an on-disk copy equals the state copy (openshift-install uses deep
    /// equality; by default the persisted files are compared byte for byte).
    fn same_as(&self, other: &Self) -> bool {
        self.files() == other.files()
    }
}

/// A typed edge to a parent asset, produced by [`dep`].
#[derive(Clone, Copy)]
pub struct Dep {
    id: TypeId,
    name: &'static str,
    state_key: &'static str,
    keys: usize,
    deps: fn() -> Vec<Dep>,
    load: fn(&mut Store<'_>, usize) -> Result<(), AssetError>,
    fetch: fn(&mut Store<'_>, usize) -> Result<(), AssetError>,
}

impl std::fmt::Debug for Dep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The edge to asset type `T`.
pub fn dep<T: Asset>() -> Dep {
    Dep {
        id: TypeId::of::<T>(),
        name: T::NAME,
        state_key: T::STATE_KEY,
        keys: T::KEYS,
        deps: T::dependencies,
        load: load_asset::<T>,
        fetch: fetch_asset::<T>,
    }
}

impl Dep {
    /// Display name of the asset.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Unfetched,
    Generated,
    OnDisk,
    StateFile,
    /// Given on the command line and different from the state file's copy.
    Given,
}

struct Entry {
    name: &'static str,
    state_key: &'static str,
    asset: Option<Box<dyn Any + Send + Sync>>,
    source: Source,
    any_parents_dirty: bool,
    present_on_disk: bool,
    files: fn(&dyn Any) -> Vec<AssetFile>,
    to_state: fn(&dyn Any) -> serde_json::Value,
}

impl Entry {
    fn is_dirty(&self) -> bool {
        matches!(self.source, Source::OnDisk | Source::Given) || self.any_parents_dirty
    }
}

fn files_of<T: Asset>(a: &dyn Any) -> Vec<AssetFile> {
    a.downcast_ref::<T>().map(T::files).unwrap_or_default()
}

fn state_of<T: Asset>(a: &dyn Any) -> serde_json::Value {
    a.downcast_ref::<T>()
        .map(|t| serde_json::to_value(t).expect("assets serialize"))
        .unwrap_or(serde_json::Value::Null)
}

/// Read access to the fetched parents of the asset being generated.
pub struct Parents<'s> {
    store: &'s Store<'s>,
}

impl Parents<'_> {
    /// The fetched parent of type `T`.
    ///
    /// # Panics
    /// If `T` was not fetched, i.e. it is missing from the asset's `dependencies()`:
    /// a programming error caught by the graph tests.
    pub fn get<T: Asset>(&self) -> &T {
        self.store
            .entries
            .get(&TypeId::of::<T>())
            .and_then(|e| e.asset.as_ref())
            .and_then(|a| a.downcast_ref::<T>())
            .unwrap_or_else(|| {
                panic!(
                    "asset {} used before it was fetched: add it to dependencies()",
                    T::NAME
                )
            })
    }
}

/// The asset store for one directory and one command run.
pub struct Store<'c> {
    dir: AssetDir,
    ctx: &'c GenCtx,
    state: BTreeMap<String, serde_json::Value>,
    entries: HashMap<TypeId, Entry>,
}

impl<'c> Store<'c> {
    /// Opens the store: reads the state file if present.
    pub fn open(dir: AssetDir, ctx: &'c GenCtx) -> Result<Self, AssetError> {
        let state = match dir.read(STATE_FILE)? {
            Some(bytes) => serde_json::from_slice(&bytes).map_err(|source| AssetError::State {
                key: STATE_FILE.to_string(),
                source,
            })?,
            None => BTreeMap::new(),
        };
        Ok(Store {
            dir,
            ctx,
            state,
            entries: HashMap::new(),
        })
    }

    /// The asset directory.
    pub fn dir(&self) -> &AssetDir {
        &self.dir
    }

    /// The pull spec recorded in the state file by an earlier run, if any.
    pub fn state_entry(&self, key: &str) -> Option<&serde_json::Value> {
        self.state.get(key)
    }

    /// Number of RSA keys needed to generate `targets` given what the state file
    /// already holds (used to size the key pool before fetching).
    pub fn keys_needed(&self, targets: &[Dep]) -> usize {
        let mut seen = HashSet::new();
        let mut stack: Vec<Dep> = targets.to_vec();
        let mut n = 0;
        while let Some(d) = stack.pop() {
            if !seen.insert(d.id) {
                continue;
            }
            if !self.state.contains_key(d.state_key) {
                n += d.keys;
            }
            stack.extend((d.deps)());
        }
        n
    }

    /// Fetches `target`: loads it and its parents, then generates what is
    /// missing. Writes nothing: call [`Store::save_and_purge`] once every
    /// target of the command was fetched, so a command that fails part way
    /// leaves the state file and its inputs as they were (openshift-install
    /// `pkg/asset/store/store.go`: fetch, then save the state, then purge).
    ///
    /// # Errors
    /// [`AssetError::Cycle`] naming the path when the graph below `target`
    /// has a cycle (checked first: loading and fetching recurse through the
    /// graph and would not come back), else [`AssetError::Fetch`] wrapping
    /// what failed.
    pub fn fetch(&mut self, target: Dep) -> Result<(), AssetError> {
        if let Some(path) = find_cycle(&[target]) {
            return Err(AssetError::Cycle { path });
        }
        debug!("Fetching {}...", target.name);
        let wrap = |e: AssetError| AssetError::Fetch {
            name: target.name,
            source: Box::new(e),
        };
        (target.load)(self, 0).map_err(wrap)?;
        (target.fetch)(self, 0).map_err(wrap)
    }

    /// Saves the state file atomically, then purges the inputs read from the
    /// directory that are not among `preserved` ("Consuming Install Config
    /// from target directory"). Call after every target was fetched.
    pub fn save_and_purge(&mut self, preserved: &[Dep]) -> Result<(), AssetError> {
        self.save_state()?;
        self.purge(preserved)
    }

    /// The fetched asset of type `T`.
    pub fn get<T: Asset>(&self) -> Option<&T> {
        self.entries
            .get(&TypeId::of::<T>())
            .and_then(|e| e.asset.as_ref())
            .and_then(|a| a.downcast_ref::<T>())
    }

    /// Writes the files of the fetched asset `target` (0640, directories 0750).
    /// Returns the relative file names written.
    pub fn persist(&self, target: Dep) -> Result<Vec<String>, AssetError> {
        let e = self.entries.get(&target.id).expect("persist after fetch");
        let a = e.asset.as_ref().expect("persist after fetch");
        let mut names = Vec::new();
        for f in (e.files)(a.as_ref()) {
            // Embedded files held as placeholders go in here (crate::blobs).
            crate::blobs::write(
                &self.dir.path(&f.filename),
                &f.data,
                FILE_MODE,
                self.ctx.cache_dir.as_deref(),
            )
            .map_err(|err| AssetError::Persist {
                name: e.name,
                source: Box::new(err),
            })?;
            names.push(f.filename);
        }
        Ok(names)
    }

    fn save_state(&mut self) -> Result<(), AssetError> {
        for e in self.entries.values() {
            if e.source == Source::Unfetched {
                continue;
            }
            if let Some(a) = &e.asset {
                self.state
                    .insert(e.state_key.to_string(), (e.to_state)(a.as_ref()));
            }
        }
        let bytes = okd_types::gojson::to_string_pretty(&self.state, "    ");
        write_atomic(&self.dir.path(STATE_FILE), bytes.as_bytes(), FILE_MODE)
    }

    fn purge(&mut self, preserved: &[Dep]) -> Result<(), AssetError> {
        let keep: HashSet<TypeId> = preserved.iter().map(|d| d.id).collect();
        let mut consumed: Vec<(&'static str, Vec<AssetFile>)> = Vec::new();
        for (id, e) in self.entries.iter_mut() {
            if !e.present_on_disk || keep.contains(id) {
                continue;
            }
            if let Some(a) = &e.asset {
                consumed.push((e.name, (e.files)(a.as_ref())));
            }
            e.present_on_disk = false;
        }
        consumed.sort_by_key(|(n, _)| *n);
        for (name, files) in consumed {
            info!("Consuming {name} from target directory");
            debug!("Purging asset \"{name}\" from disk");
            for f in files {
                self.dir.remove(&f.filename)?;
            }
        }
        Ok(())
    }
}

fn indent(depth: usize) -> String {
    "  ".repeat(depth)
}

fn load_asset<T: Asset>(store: &mut Store<'_>, depth: usize) -> Result<(), AssetError> {
    let id = TypeId::of::<T>();
    if store.entries.contains_key(&id) {
        return Ok(());
    }
    let ind = indent(depth);
    debug!("{ind}Loading {}...", T::NAME);
    let mut any_parents_dirty = false;
    for d in T::dependencies() {
        (d.load)(store, depth + 1)?;
        let pe = &store.entries[&d.id];
        if pe.is_dirty() {
            any_parents_dirty = true;
        }
    }
    let on_disk = if T::WRITABLE {
        T::load(&store.dir, store.ctx).map_err(|e| AssetError::Step {
            step: "load",
            name: T::NAME,
            source: Box::new(e),
        })?
    } else {
        None
    };
    let present_on_disk = on_disk.is_some();
    let mut from_state: Option<T> = None;
    if !any_parents_dirty && let Some(raw) = store.state.get(T::STATE_KEY) {
        let s: T = serde_json::from_value(raw.clone()).map_err(|source| AssetError::State {
            key: T::STATE_KEY.to_string(),
            source,
        })?;
        s.recheck(store.ctx).map_err(|e| AssetError::Step {
            step: "load",
            name: T::NAME,
            source: Box::new(e),
        })?;
        from_state = Some(s);
    }
    let (asset, source): (Option<T>, Source) = if any_parents_dirty {
        if present_on_disk {
            warn!(
                "Discarding the {} that was provided in the target directory because its dependencies are dirty and it needs to be regenerated",
                T::NAME
            );
        }
        (None, Source::Unfetched)
    } else {
        match (on_disk, from_state) {
            (Some(d), Some(s)) => {
                debug!(
                    "{ind}Loading {} from both state file and target directory",
                    T::NAME
                );
                if d.same_as(&s) {
                    debug!("{ind}On-disk {} matches asset in state file", T::NAME);
                    (Some(s), Source::StateFile)
                } else {
                    debug!("{ind}Using {} loaded from target directory", T::NAME);
                    (Some(d), Source::OnDisk)
                }
            }
            (Some(d), None) => {
                debug!("{ind}Using {} loaded from target directory", T::NAME);
                (Some(d), Source::OnDisk)
            }
            (None, Some(s)) => match T::given(store.ctx) {
                Some(g) if !g.same_as(&s) => {
                    warn!(
                        "{}: regenerating the assets that depend on it",
                        g.describe_change(&s)
                    );
                    (Some(g), Source::Given)
                }
                _ => {
                    debug!("{ind}Using {} loaded from state file", T::NAME);
                    (Some(s), Source::StateFile)
                }
            },
            (None, None) => (None, Source::Unfetched),
        }
    };
    store.entries.insert(
        id,
        Entry {
            name: T::NAME,
            state_key: T::STATE_KEY,
            asset: asset.map(|a| Box::new(a) as Box<dyn Any + Send + Sync>),
            source,
            any_parents_dirty,
            present_on_disk,
            files: files_of::<T>,
            to_state: state_of::<T>,
        },
    );
    Ok(())
}

fn fetch_asset<T: Asset>(store: &mut Store<'_>, depth: usize) -> Result<(), AssetError> {
    let id = TypeId::of::<T>();
    if !store.entries.contains_key(&id) {
        load_asset::<T>(store, depth)?;
    }
    let ind = indent(depth);
    if store.entries[&id].source != Source::Unfetched {
        debug!("{ind}Reusing previously-fetched {}", T::NAME);
        return Ok(());
    }
    for d in T::dependencies() {
        debug!("{}Fetching {}...", indent(depth + 1), d.name);
        (d.fetch)(store, depth + 1).map_err(|e| AssetError::Step {
            step: "fetch dependency of",
            name: T::NAME,
            source: Box::new(e),
        })?;
    }
    debug!("{ind}Generating {}...", T::NAME);
    if store.ctx.fail_generating.as_deref() == Some(T::NAME) {
        return Err(AssetError::Step {
            step: "generate",
            name: T::NAME,
            source: Box::new(AssetError::Invalid("injected failure".to_string())),
        });
    }
    let generated = {
        let parents = Parents { store: &*store };
        T::generate(store.ctx, &parents).map_err(|e| AssetError::Step {
            step: "generate",
            name: T::NAME,
            source: Box::new(e),
        })?
    };
    let e = store.entries.get_mut(&id).expect("loaded above");
    e.asset = Some(Box::new(generated));
    e.source = Source::Generated;
    Ok(())
}

/// A cycle in the graph below `targets`: the display names along it, the
/// first repeated at the end (`A -> B -> A`), or `None` for a DAG. A
/// depth-first walk with an explicit stack, so even a deep or cyclic graph
/// cannot overflow the thread's stack.
pub fn find_cycle(targets: &[Dep]) -> Option<Vec<&'static str>> {
    // Done: every asset below it was walked and no cycle passes through it.
    let mut done: HashSet<TypeId> = HashSet::new();
    for &t in targets {
        if done.contains(&t.id) {
            continue;
        }
        // The path from `t` down to the asset being walked, each with the
        // parents still to visit.
        let mut path: Vec<(Dep, Vec<Dep>)> = vec![(t, (t.deps)())];
        while let Some((_, pending)) = path.last_mut() {
            let Some(next) = pending.pop() else {
                let (d, _) = path.pop().expect("non-empty");
                done.insert(d.id);
                continue;
            };
            if done.contains(&next.id) {
                continue;
            }
            if let Some(at) = path.iter().position(|(d, _)| d.id == next.id) {
                let mut names: Vec<&'static str> = path[at..].iter().map(|(d, _)| d.name).collect();
                names.push(next.name);
                return Some(names);
            }
            path.push((next, (next.deps)()));
        }
    }
    None
}

/// The display names of every asset below `targets` (the targets included),
/// each once, sorted.
pub fn asset_names(targets: &[Dep]) -> Vec<&'static str> {
    let mut seen = HashSet::new();
    let mut names = Vec::new();
    let mut stack: Vec<Dep> = targets.to_vec();
    while let Some(d) = stack.pop() {
        if seen.insert(d.id) {
            names.push(d.name);
            stack.extend((d.deps)());
        }
    }
    names.sort_unstable();
    names
}

/// Prints the graph below `targets` in Graphviz DOT (the `graph` command).
pub fn graph_dot(targets: &[Dep]) -> String {
    let mut out = String::from("digraph okd_install {\n");
    let mut seen = HashSet::new();
    let mut stack: Vec<Dep> = targets.to_vec();
    while let Some(d) = stack.pop() {
        if !seen.insert(d.id) {
            continue;
        }
        for p in (d.deps)() {
            out.push_str(&format!("  \"{}\" -> \"{}\";\n", d.name, p.name));
            stack.push(p);
        }
    }
    out.push_str("}\n");
    out
}
