"""Structure standardization: one standardized parent per SMILES, and the key that says which structures are one
compound (:func:`compound_key`). Used by the curation of activities (:mod:`screenbai.chem.curate`) and by a
campaign's library (:mod:`screenbai.campaign.library`).
"""

from __future__ import annotations

import logging
import multiprocessing
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from screenbai.workers import worker_count

logger = logging.getLogger("screenbai.chem")

__all__ = ["MAX_HEAVY_ATOMS", "Standardizer", "compound_key", "count_heavy_atoms", "enhanced_stereo",
           "may_be_same", "same_compound", "standardize_smiles", "standardize_unique", "stereo_as_written",
           "stereo_as_written_note", "unknown_configuration"]


#: Largest structure curation identifies: InChI (whose key merges replicates) holds at
#: most 1023 heavy atoms, and RDKit can crash on SMILES of some 10,000 atoms.
MAX_HEAVY_ATOMS = 1023

# One atom of a SMILES string: a bracket atom (isotope, element, ...) or an organic-subset atom.
_SMILES_ATOM = re.compile(r"\[\d*([A-Z][a-z]?|[a-z]{1,2}|\*)[^\]]*\]|Br|Cl|[BCNOPSFI]|[bcnops]|\*")

#: Non-metals (metalloids B, Si, As, Se, Te included, as in medicinal chemistry).
_NON_METALS = frozenset((
    "H", "He", "B", "C", "N", "O", "F", "Ne", "Si", "P", "S", "Cl", "Ar", "As", "Se", "Br", "Kr", "Te", "I",
    "Xe", "At", "Rn", "*",
))
#: Metals that occur as counter-ions of drug salts; they are stripped like any counter-ion.
_COUNTER_ION_METALS = frozenset(("Li", "Na", "K", "Rb", "Cs", "Mg", "Ca", "Sr", "Ba"))
_NOT_A_METAL_COMPLEX = _NON_METALS | _COUNTER_ION_METALS

# Pharmaceutical counter-acids missing from RDKit's default salt/solvent list (charged or not;
# a pattern strips a fragment only if it matches the whole fragment).
_EXTRA_COUNTER_IONS = """\
tosic acid\tCc1ccc(cc1)S(=O)(=O)[O;H1,-1]
benzenesulfonic acid\tc1ccc(cc1)S(=O)(=O)[O;H1,-1]
ethanesulfonic acid\tCCS(=O)(=O)[O;H1,-1]
isethionic acid\tOCCS(=O)(=O)[O;H1,-1]
oxalic acid\t[O;H1,-1]C(=O)C(=O)[O;H1,-1]
maleic or fumaric acid\t[O;H1,-1]C(=O)C=CC(=O)[O;H1,-1]
succinic acid\t[O;H1,-1]C(=O)CCC(=O)[O;H1,-1]
malic acid\t[O;H1,-1]C(=O)CC(O)C(=O)[O;H1,-1]
tartaric acid\t[O;H1,-1]C(=O)C(O)C(O)C(=O)[O;H1,-1]
citric acid\t[O;H1,-1]C(=O)CC(O)(CC(=O)[O;H1,-1])C(=O)[O;H1,-1]
lactic acid\tCC(O)C(=O)[O;H1,-1]
pamoic acid\t[O;H1,-1]C(=O)c1cc2ccccc2c(Cc2c(O)c(C(=O)[O;H1,-1])cc3ccccc23)c1O
camphorsulfonic acid\tCC1(C)C2CCC1(CS(=O)(=O)[O;H1,-1])C(=O)C2
napsylic acid\tc1ccc2cc(ccc2c1)S(=O)(=O)[O;H1,-1]
edisylic acid\t[O;H1,-1]S(=O)(=O)CCS(=O)(=O)[O;H1,-1]
gluconic acid\tOCC(O)C(O)C(O)C(O)C(=O)[O;H1,-1]
"""
# Pharmaceutical counter-bases (the salts of acidic drugs), free or protonated: SMARTS atoms without H or charge
# match both; the guanidine of arginine with any of its C-N bonds double
_COUNTER_BASES = """\
triethylamine\tCCN(CC)CC
diethylamine\tCCNCC
ethanolamine\tNCCO
diethanolamine\tOCCNCCO
triethanolamine\tOCCN(CCO)CCO
tromethamine (Tris)\tNC(CO)(CO)CO
meglumine\tCNCC(O)C(O)C(O)C(O)CO
choline\tCN(C)(C)CCO
tert-butylamine (erbumine)\tCC(C)(C)N
dicyclohexylamine\tC1CCC(CC1)NC1CCCCC1
benzathine\tC(CNCc1ccccc1)NCc1ccccc1
lysine\tNCCCCC(N)C(=O)O
arginine\tN~C(~N)~NCCCC(N)C(=O)O
"""


def count_heavy_atoms(smiles: str) -> int:
    """Heavy atoms written in a SMILES string, counted on the text (no parsing)."""
    return sum(1 for m in _SMILES_ATOM.finditer(smiles) if m.group(1) != "H")


def _distinct_organic_fragments(mol: Any) -> dict[str, Any]:
    """Canonical SMILES -> fragment, for the fragments holding carbon."""
    from rdkit import Chem

    out: dict[str, Any] = {}
    for frag in Chem.GetMolFrags(mol, asMols=True):
        if any(a.GetAtomicNum() == 6 for a in frag.GetAtoms()):
            out.setdefault(Chem.MolToSmiles(frag), frag)
    return out


class Standardizer:
    """RDKit MolStandardize pipeline, built once per curation call (no global state).

    Which fragment is the compound: the one left once recognised counter-ions and solvents
    (RDKit's list plus common pharmaceutical counter-acids) and carbon-free fragments are
    removed.  Structures that hold no such single compound are dropped, each under its own
    reason, never reduced to a piece (cisplatin to ammonia, ferrocene to cyclopentadiene):

    - ``text after the SMILES``: a blank inside it (``CC O``), whose rest RDKit would ignore;
    - ``structure too large``: more than :data:`MAX_HEAVY_ATOMS` heavy atoms, counted on the
      SMILES text before RDKit sees it;
    - ``metal-containing structure``: a metal other than an alkali or alkaline-earth
      counter-ion (coordination complexes, organometallics, metal salts);
    - ``inorganic structure``: no fragment with carbon;
    - ``mixture of several compounds``: two or more different fragments remain;
    - ``no parent: only solvents and counter-ions``: two or more different organic fragments, each a known
      solvent or counter-ion (``CCO.c1ccccc1``): no fragment is the compound.  A single organic fragment
      that is itself on the lists is the compound (sodium acetate is acetic acid).

    The kept compound is then normalized, neutralised with the Uncharger, and optionally
    tautomer-canonicalized.
    """

    def __init__(self, canonical_tautomer: bool = False, keyed: bool = True) -> None:
        self._canonical_tautomer = canonical_tautomer
        # keyed=False: no compound key (the standard InChIKey stands in), which saves the FixedH InChI, a third of
        # the time of a structure, where only the standard key is read (standardize_smiles: a campaign's library)
        self._keyed = keyed
        from rdkit.Chem.MolStandardize import rdMolStandardize

        self._disconnector = rdMolStandardize.MetalDisconnector()
        self._normalizer = rdMolStandardize.Normalizer()
        # leave_last=False: a fragment a list names is removed whole, so an empty result says it is on the list
        self._removers = (
            rdMolStandardize.FragmentRemover("", False),
            rdMolStandardize.FragmentRemoverFromData(_EXTRA_COUNTER_IONS + _COUNTER_BASES, False),
        )
        self._uncharger = rdMolStandardize.Uncharger()
        self._tautomer = None
        if canonical_tautomer:
            # RDKit's default removes the stereo of every atom and bond some tautomer touches: L- and D-alanine
            # (alpha C-H next to C=O), E and Z oximes would be one compound
            params = rdMolStandardize.CleanupParameters()
            params.tautomerRemoveSp3Stereo = False  # type: ignore[assignment]  # RDKit's stubs type it wrongly
            params.tautomerRemoveBondStereo = False  # type: ignore[assignment]
            self._tautomer = rdMolStandardize.TautomerEnumerator(params)
        #: input SMILES kept as drawn because their canonical tautomer loses a stereocentre or E/Z bond they specify
        self.kept_as_drawn: list[str] = []
        #: input SMILES whose stereo RDKit cannot hold (an allene's axis): one compound per SMILES as written
        self.stereo_as_written: list[str] = []

    def _known(self, fragment: Any) -> bool:
        """Whether a fragment is a known counter-ion or solvent (one of the lists matches it whole)."""
        from rdkit import Chem

        return any(r.remove(Chem.Mol(fragment)).GetNumAtoms() == 0 for r in self._removers)

    def _the_compound(self, mol: Any) -> Any | str:
        """The one fragment that is the compound, or the reason there is none."""
        from rdkit import Chem

        if any(a.GetSymbol() not in _NOT_A_METAL_COMPLEX for a in mol.GetAtoms()):
            return "metal-containing structure"
        self._disconnector.DisconnectInPlace(mol)
        self._normalizer.normalizeInPlace(mol)
        if len(Chem.GetMolFrags(mol)) == 1:  # most structures: nothing to strip
            return mol if any(a.GetAtomicNum() == 6 for a in mol.GetAtoms()) else "inorganic structure"
        organic = _distinct_organic_fragments(mol)
        if not organic:
            return "inorganic structure"
        parents = [f for f in organic.values() if not self._known(f)]
        if len(parents) > 1:
            return "mixture of several compounds"
        if parents:
            return parents[0]
        if len(organic) == 1:  # the substance itself is a counter-ion or solvent (sodium acetate: acetic acid)
            return next(iter(organic.values()))
        # ethanol and benzene: which one was tested is unknown, and neither is a drug's parent
        return "no parent: only solvents and counter-ions"

    def __call__(self, smiles: str) -> tuple[str, str, str, float] | str:
        """Return (smiles, standard inchikey, compound key, mw of the input as given) or a drop reason."""
        from rdkit import Chem
        from rdkit.Chem import Descriptors

        if count_heavy_atoms(smiles) > MAX_HEAVY_ATOMS:
            return "structure too large"
        mol = Chem.MolFromSmiles(smiles)
        if mol is None:
            return "unparseable SMILES"
        if mol.HasProp("_Name"):  # RDKit reads up to a blank and takes the rest for a name: 'CC O' would be ethane
            return "text after the SMILES"
        try:
            as_written = _stereo_lost_on_reading(smiles, mol)
            # MolWt is added to Descriptors at import time; RDKit's stubs do not list it
            mw = float(Descriptors.MolWt(mol))  # type: ignore[attr-defined]
            compound = self._the_compound(mol)
            if isinstance(compound, str):
                return compound
            self._uncharger.unchargeInPlace(compound)
            if self._tautomer is not None:
                canonical = self._tautomer.Canonicalize(compound)
                if _n_stereo(canonical) < _n_stereo(compound):  # e.g. an aromatic tautomer of a chiral hydantoin
                    self.kept_as_drawn.append(smiles)
                else:
                    compound = canonical
            out_smiles = _smiles(compound)
            inchikey = Chem.MolToInchiKey(compound)
            key = compound_key(compound, self._canonical_tautomer, inchikey) if self._keyed else inchikey
            if enhanced_stereo(out_smiles):  # InChI cannot say racemic: the racemate is not its drawn enantiomer
                key = f"{key} {enhanced_stereo(out_smiles)}"
            if as_written:  # CC=[C@]=CC and CC=[C@@]=CC would both be CC=C=CC: one compound per SMILES as written
                key = f"{key}{_AS_WRITTEN}{smiles}"
                self.stereo_as_written.append(smiles)
        except Exception:  # RDKit raises assorted errors on exotic structures
            return "standardization failed"
        if not inchikey or not key or not out_smiles:
            return "standardization failed"
        return out_smiles, inchikey, key, mw


#: what a compound key holds before the SMILES as written of a structure whose stereo RDKit cannot hold
_AS_WRITTEN = " as written "


def stereo_as_written(key: str) -> bool:
    """Whether a compound key is one SMILES as written: stereo RDKit cannot hold (an allene's axis), so the key
    of its standardized structure would merge its stereoisomers."""
    return _AS_WRITTEN in key


def same_compound(key: str, smiles: str, compound_id: str) -> str:
    """Which rows are one compound, in curation and a campaign's library: rows with the same value are.  ``key``
    is the :class:`Standardizer`'s (its enhanced stereo and, where RDKit drops the stereo, its SMILES as written
    included), ``smiles`` the standardized SMILES; a structure of unknown configuration (``|o1:1|``) is one
    compound per id (two ids may be the two enantiomers)."""
    return f"{key} {compound_id}" if unknown_configuration(smiles) else key


#: what a SMILES holds besides its heavy atoms' letters (digits, bonds, brackets, charges, H), for ``_heavy_letters``
_NOT_HEAVY = str.maketrans({c: None for c in map(chr, range(128)) if not c.isalpha() or c == "H"})
_CHIRAL_CLASS = re.compile(r"@(?:TH|AL|SP|TB|OH)\d*")


def _heavy_letters(smiles: str) -> str:
    """The letters of a SMILES's heavy atoms, upper-cased and sorted (its CXSMILES extension and chirality classes
    left out): equal for two structures with the same heavy atoms, whatever their H, bonds or stereo."""
    core = smiles.split(" ", 1)[0]
    if "@" in core:
        core = _CHIRAL_CLASS.sub("@", core)
    return "".join(sorted(core.upper().translate(_NOT_HEAVY)))


def _element_graph(smiles: str) -> str | None:
    """RDKit's element-graph hash of a SMILES (its heavy atoms and their connections; bond orders, H, charges,
    isotopes and stereo left out): equal for tautomers and stereoisomers; None where RDKit cannot read it."""
    from rdkit import Chem
    from rdkit.Chem import rdMolHash

    mol = Chem.MolFromSmiles(smiles, sanitize=False)
    if mol is None:
        return None
    mol.UpdatePropertyCache(strict=False)
    Chem.RemoveStereochemistry(mol)  # the hash keeps a centre's; InChI drops some, and a tautomer may lose one
    return rdMolHash.MolHash(mol, rdMolHash.HashFunction.ElementGraph)


def may_be_same(new: Sequence[str], stored: Sequence[str]) -> list[list[int]]:
    """For each standardized SMILES of ``new``, the indices of the standardized SMILES ``stored`` that may be the
    same compound by :func:`same_compound` (which then decides, from each one's key): those with the same heavy
    atoms and the same graph of them.  Structures of one standard InChI have both, whatever their mobile H
    (2-hydroxypyridine and 2-pyridone), so none is missed; this keeps the standardization (about 1 ms a structure)
    to a few of a library of 1.58 M, which a campaign does not store the keys of.  Letters first (1.58 M SMILES in
    about 2 s, no RDKit), then RDKit's element-graph hash of those sharing them (60 us each)."""
    from rdkit.rdBase import BlockLogs

    letters = [_heavy_letters(s) for s in new]
    wanted = set(letters)
    by_letters: dict[str, list[int]] = {}
    for i, s in enumerate(stored):
        key = _heavy_letters(s)
        if key in wanted:
            by_letters.setdefault(key, []).append(i)
    with BlockLogs():
        graphs: dict[int, str | None] = {i: _element_graph(stored[i]) for ids in by_letters.values() for i in ids}
        out = []
        for s, key in zip(new, letters):
            graph = _element_graph(s)
            out.append([i for i in by_letters.get(key, []) if graph is None or graphs[i] in (None, graph)])
    return out


def stereo_as_written_note(smiles: Sequence[str]) -> str:
    """What a log says of the structures kept apart by their SMILES as written."""
    return (f"{len(smiles)} structures specify stereo RDKit cannot hold (an allene's axis, a cumulene's '/'): each is "
            "its own compound by its SMILES as written, never merged with its stereoisomers (the same structure "
            f"written another way is not merged either): {', '.join(list(smiles)[:10])}")


def _stereo_lost_on_reading(smiles: str, mol: Any) -> bool:
    """Whether ``smiles`` specifies stereo that RDKit's reading of it (``mol``) no longer holds: the '@' of an
    allene whose ends each bear two different groups (axial chirality: CC=[C@]=CC), '/' or '\\' at the end of
    a cumulene, '@' on an atom that is no tetrahedral centre.  Not a loss: '@' on a tetrahedral atom RDKit
    finds no stereocentre (C[C@H](C)CC: two like groups), '/' on a double bond with two like groups at an end.
    Atropisomers have no SMILES notation: two of them arrive as one SMILES, and nothing here can tell them."""
    if "@" not in smiles and "/" not in smiles and "\\" not in smiles:
        return False
    from rdkit import Chem

    raw = Chem.MolFromSmiles(smiles, sanitize=False)  # keeps every '@' and '/' as written
    if raw is None:
        return False
    if raw.GetNumAtoms() != mol.GetNumAtoms():  # explicit [H] atoms, which the default reading removes
        params = Chem.SmilesParserParams()
        params.removeHs = False  # type: ignore[assignment]  # RDKit's stubs type it wrongly
        mol = Chem.MolFromSmiles(smiles, params)
        if mol is None or raw.GetNumAtoms() != mol.GetNumAtoms():
            return False
    ranks: list[int] | None = None
    for written, read in zip(raw.GetAtoms(), mol.GetAtoms()):
        if written.GetChiralTag() == Chem.ChiralType.CHI_UNSPECIFIED or \
                read.GetChiralTag() != Chem.ChiralType.CHI_UNSPECIFIED:
            continue
        if read.GetHybridization() == Chem.HybridizationType.SP3 and read.GetDegree() + read.GetTotalNumHs() >= 3:
            continue  # a tetrahedral atom with two like groups: no stereocentre
        ranks = ranks or list(Chem.CanonicalRankAtoms(mol, breakTies=False))
        if not _is_cumulene_centre(read) or all(_two_different_groups(end, read, ranks) for end in
                                                (b.GetOtherAtom(read) for b in read.GetBonds())):
            return True
    for bond in raw.GetBonds():
        if bond.GetBondDir() in (Chem.BondDir.ENDUPRIGHT, Chem.BondDir.ENDDOWNRIGHT):
            ends = (mol.GetAtomWithIdx(bond.GetBeginAtomIdx()), mol.GetAtomWithIdx(bond.GetEndAtomIdx()))
            if any(_is_cumulene_centre(n) for a in ends for n in a.GetNeighbors()
                   if mol.GetBondBetweenAtoms(a.GetIdx(), n.GetIdx()).GetBondType() == Chem.BondType.DOUBLE):
                return True
    return False


def _is_cumulene_centre(atom: Any) -> bool:
    from rdkit import Chem

    return sum(b.GetBondType() == Chem.BondType.DOUBLE for b in atom.GetBonds()) == 2


def _two_different_groups(end: Any, centre: Any, ranks: list[int]) -> bool:
    """Whether an allene's end atom bears two different groups besides the centre (H counts as a group)."""
    others = [ranks[n.GetIdx()] for n in end.GetNeighbors() if n.GetIdx() != centre.GetIdx()]
    groups = others + [-1] * end.GetTotalNumHs()
    return len(groups) == 2 and groups[0] != groups[1]


def _smiles(mol: Any) -> str:
    """Canonical SMILES; with CXSMILES' enhanced stereo where its stereo groups say racemic (``|&1:1|``) or one
    enantiomer of unknown configuration (``|o1:1|``): without it the SMILES would name the enantiomer drawn."""
    from rdkit import Chem

    if all(g.GetGroupType() == Chem.StereoGroupType.STEREO_ABSOLUTE for g in mol.GetStereoGroups()):
        return Chem.MolToSmiles(mol)
    Chem.CanonicalizeEnhancedStereo(mol)  # the racemate drawn from (R) or (S): one SMILES
    return Chem.MolToCXSmiles(mol, Chem.SmilesWriteParams(), Chem.CXSmilesFields.CX_ENHANCEDSTEREO)


_OR_GROUP = re.compile(r"[|,]o\d+:")


def enhanced_stereo(smiles: str) -> str:
    """The enhanced-stereo extension of a standardized SMILES (``|&1:1|``), '' for none."""
    return smiles.partition(" ")[2]


def unknown_configuration(smiles: str) -> bool:
    """Whether a standardized SMILES holds an 'or' stereo group (``|o1:1|``): one enantiomer, which one unknown.
    Two ids of such a structure may be the two enantiomers (the two peaks of a chiral separation): never one
    compound by their structure."""
    return bool(_OR_GROUP.search(enhanced_stereo(smiles)))


def _n_stereo(mol: Any) -> int:
    """Specified stereocentres and E/Z double bonds of a molecule."""
    from rdkit import Chem

    centres = Chem.FindMolChiralCenters(mol, includeUnassigned=False, useLegacyImplementation=False)
    bonds = sum(b.GetStereo() != Chem.BondStereo.STEREONONE and b.GetStereo() != Chem.BondStereo.STEREOANY
                for b in mol.GetBonds())
    return len(centres) + int(bonds)


def compound_key(mol: Any, canonical_tautomer: bool, inchikey: str | None = None) -> str:
    """The identity of a standardized molecule: rows with the same key are one compound.

    With ``canonical_tautomer`` the standard InChIKey (the tautomer is canonical already).
    Without, the InChIKey of the non-standard InChI with the FixedH layer: the standard InChI's
    mobile-H layer gives tautomers one key (2-hydroxypyridine and 2-pyridone), which would merge
    what the setting keeps apart; the FixedH layer says where each mobile H sits, and all else
    InChI normalizes stays as in the standard key.  (RDKit's canonical SMILES would also tell
    tautomers apart, but would split more than tautomers from today's keys, e.g. on stereo InChI ignores.)
    """
    from rdkit import Chem

    if canonical_tautomer:
        return Chem.MolToInchiKey(mol) if inchikey is None else inchikey  # ``inchikey``: mol's, already computed
    return Chem.MolToInchiKey(mol, options="/FixedH")


#: structures per task of the worker processes of :func:`standardize_smiles` (about 6 s of RDKit each)
CHUNK_SIZE = 5_000


def _standardize_chunk(
    task: tuple[list[str | None], bool],
) -> list[tuple[str | None, str | None, str | None, str | None]]:
    """(smiles, standard inchikey, key, error) of each SMILES of a chunk: a worker's task (or, in one process, each
    chunk in turn)."""
    from rdkit.rdBase import BlockLogs

    smiles, canonical_tautomer = task
    std = Standardizer(canonical_tautomer, keyed=False)  # stateless per structure: chunks are independent
    out: list[tuple[str | None, str | None, str | None, str | None]] = []
    with BlockLogs():
        for s in smiles:
            res = std(s) if isinstance(s, str) and s.strip() else "missing SMILES"
            out.append((None, None, None, res) if isinstance(res, str) else (res[0], res[1], res[2], None))
    return out


def standardize_smiles(
    smiles: Sequence[str | None],
    *,
    canonical_tautomer: bool = False,
    n_jobs: int | None = 1,
    chunk_size: int | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Standardize SMILES (cleanup, largest fragment, neutralise[, canonical tautomer]).

    Returns a frame with ``input_smiles, smiles, inchikey, key, error`` (``error`` is ``None``
    on success, else the reason; ``key``: the standard InChIKey, with the enhanced stereo and, where RDKit drops
    the stereo written, the SMILES as written: see :func:`same_compound`); RDKit's log output is suppressed.
    Above one chunk of ``chunk_size``
    structures (default :data:`CHUNK_SIZE`), ``n_jobs`` worker processes (-1 or None: one per core) standardize
    the chunks; each structure is standardized on its own, so the frame is the same whatever the number of
    workers.  ``progress``: a bar over structures on stderr.
    """
    from tqdm.auto import tqdm

    smiles = list(smiles)
    n_jobs = worker_count(n_jobs)
    chunk_size = CHUNK_SIZE if chunk_size is None else chunk_size
    if int(chunk_size) < 1:
        raise ValueError(f"chunk_size = {chunk_size}: give at least 1 structure per chunk")
    step = int(chunk_size)
    tasks = [(smiles[i : i + step], canonical_tautomer) for i in range(0, len(smiles), step)]
    n_jobs = min(n_jobs, len(tasks))
    rows: list[tuple[str | None, str | None, str | None, str | None]] = []
    bar = tqdm(total=len(smiles), unit="mol", desc="standardizing", disable=not progress, smoothing=0.05)
    pool = multiprocessing.get_context("fork").Pool(n_jobs) if n_jobs > 1 else None
    try:
        # imap keeps the chunks' order: the rows come out in input order whichever worker finished first
        results = map(_standardize_chunk, tasks) if pool is None else pool.imap(_standardize_chunk, tasks)
        for task, done in zip(tasks, results):
            rows.extend(done)
            bar.update(len(task[0]))
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        bar.close()
    columns = {
        "input_smiles": pd.Series(smiles, dtype=object),
        "smiles": pd.Series([r[0] for r in rows], dtype=object),
        "inchikey": pd.Series([r[1] for r in rows], dtype=object),
        "key": pd.Series([r[2] for r in rows], dtype=object),
        "error": pd.Series([r[3] for r in rows], dtype=object),
    }
    return pd.DataFrame(columns)


def standardize_unique(
    smiles: set[str], canonical_tautomer: bool
) -> dict[str, tuple[str, str, str, float] | str]:
    """Standardize each unique SMILES once: (smiles, inchikey, compound key, mw) or a drop reason."""
    from rdkit.rdBase import BlockLogs

    standardizer = Standardizer(canonical_tautomer)
    with BlockLogs():
        out = {s: standardizer(s) for s in sorted(smiles)}
    if standardizer.kept_as_drawn:
        logger.warning(
            "%d structures kept as drawn, not as their canonical tautomer, which loses a stereocentre or E/Z bond "
            "they specify (stereoisomers would become one compound): %s", len(standardizer.kept_as_drawn),
            ", ".join(standardizer.kept_as_drawn[:10]),
        )
    if standardizer.stereo_as_written:
        logger.warning("%s", stereo_as_written_note(standardizer.stereo_as_written))
    return out
