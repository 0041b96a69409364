"""Is this file text worth indexing? Decided from its name first (free), then from its first
8 KB, so enumeration never reads whole files.

Text is what decodes as UTF-8 (a few stray bytes tolerated, e.g. a Latin-1 comment in an
otherwise UTF-8 file) or carries a UTF-16/UTF-32 byte-order mark (Windows tools write those);
everything else is binary.
"""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass

SNIFF_BYTES = 8192

# O_NONBLOCK: a file swapped for a FIFO after the scan must not hang the reader.
OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)

# Share of undecodable bytes / control characters above which a sample counts as binary.
# A Latin-1 French text has ~3 % non-ASCII bytes; compiled code and compressed data have
# far more than 10 %.
MAX_INVALID_RATIO = 0.10
MAX_CONTROL_RATIO = 0.10

BINARY_EXTENSIONS = frozenset(
    """
    png jpg jpeg gif bmp ico icns tif tiff webp avif heic heif psd xcf raw cr2 nef
    mp3 mp4 m4a m4v mov avi mkv webm wav flac ogg oga ogv opus aac wma wmv mid midi
    zip gz tgz bz2 xz zst lz lz4 7z rar tar jar war ear whl egg apk ipa dmg iso img deb rpm
    msi cab
    pdf doc docx xls xlsx ppt pptx odt ods odp rtf epub mobi
    exe dll so dylib a lib o obj ko bin dat elf pyc pyo pyd class dex wasm node
    sqlite sqlite3 db mdb accdb parquet feather arrow avro orc npy npz pkl pickle h5 hdf5
    onnx pt pth ckpt safetensors tflite pb gguf
    ttf otf woff woff2 eot
    blend fbx glb stl 3ds max
    swf fla sketch fig
    """.split()
)

# (offset, signature, kind) — checked before any decoding.
_MAGIC: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "PNG image"),
    (0, b"\xff\xd8\xff", "JPEG image"),
    (0, b"GIF87a", "GIF image"),
    (0, b"GIF89a", "GIF image"),
    (0, b"%PDF-", "PDF document"),
    (0, b"PK\x03\x04", "ZIP archive"),
    (0, b"PK\x05\x06", "ZIP archive"),
    (0, b"\x1f\x8b", "gzip data"),
    (0, b"BZh", "bzip2 data"),
    (0, b"\xfd7zXZ\x00", "xz data"),
    (0, b"\x28\xb5\x2f\xfd", "zstd data"),
    (0, b"7z\xbc\xaf\x27\x1c", "7-zip archive"),
    (0, b"Rar!\x1a\x07", "RAR archive"),
    (0, b"\x7fELF", "ELF executable"),
    (0, b"\xfe\xed\xfa\xce", "Mach-O binary"),
    (0, b"\xfe\xed\xfa\xcf", "Mach-O binary"),
    (0, b"\xce\xfa\xed\xfe", "Mach-O binary"),
    (0, b"\xcf\xfa\xed\xfe", "Mach-O binary"),
    (0, b"\xca\xfe\xba\xbe", "Mach-O universal binary or Java class"),
    (0, b"MZ", "PE/DOS executable"),
    (0, b"SQLite format 3\x00", "SQLite database"),
    (0, b"\x00asm", "WebAssembly module"),
    (0, b"RIFF", "RIFF media (WAV/AVI/WebP)"),
    (0, b"OggS", "Ogg media"),
    (0, b"fLaC", "FLAC audio"),
    (0, b"ID3", "MP3 audio"),
    (0, b"\x1a\x45\xdf\xa3", "Matroska/WebM media"),
    (0, b"wOFF", "WOFF font"),
    (0, b"wOF2", "WOFF2 font"),
    (0, b"\x00\x01\x00\x00\x00", "TrueType font"),
    (0, b"OTTO", "OpenType font"),
    (0, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "MS Office (OLE) document"),
    (0, b"BM", "BMP image"),
    (0, b"II*\x00", "TIFF image"),
    (0, b"MM\x00*", "TIFF image"),
    (0, b"\x00\x00\x01\x00", "ICO image"),
    (0, b"\x93NUMPY", "NumPy array"),
    (0, b"PAR1", "Parquet file"),
    (0, b"GGUF", "GGUF model"),
    (4, b"ftyp", "MP4/QuickTime/HEIF media"),
    (257, b"ustar", "tar archive"),
)
# Signatures made of printable characters also start ordinary text ("BMW ...", "RIFF
# sections", "ID3 tags"): they only count when the sample has a NUL or invalid UTF-8 too.
_WEAK_MAGIC = frozenset(
    {b"MZ", b"BM", b"ID3", b"BZh", b"RIFF", b"OggS", b"fLaC", b"GGUF", b"PAR1", b"OTTO",
     b"wOFF", b"wOF2", b"ftyp", b"ustar", b"GIF87a", b"GIF89a"}
)

_MAGIC_BY_PREFIX: dict[bytes, tuple[tuple[int, bytes, str], ...]] = {}
for _entry in _MAGIC:
    if _entry[0] == 0:
        _MAGIC_BY_PREFIX[_entry[1][:2]] = _MAGIC_BY_PREFIX.get(_entry[1][:2], ()) + (_entry,)
del _entry
_MAGIC_AT_OFFSET = tuple(entry for entry in _MAGIC if entry[0] != 0)

# Byte-order marks; the longer UTF-32 LE mark must be tested before UTF-16 LE.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)

# C0 controls that never appear in text (tab, LF, VT, FF, CR and ESC do).
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 11, 12, 13, 27))


@dataclass(frozen=True)
class Verdict:
    """`binary` False means text in `encoding`; `detail` says why a file is binary."""

    binary: bool
    encoding: str = "utf-8"
    detail: str = ""


TEXT_UTF8 = Verdict(False, "utf-8")


def extension_of(name: str) -> str:
    """Lower-case extension without the dot ('' for none; '.bashrc' has none)."""
    dot = name.rfind(".")
    return name[dot + 1 :].lower() if dot > 0 else ""


def binary_by_name(name: str) -> str | None:
    """A reason when the extension alone says binary, so the file need not be opened."""
    ext = extension_of(name)
    return f".{ext} files are binary" if ext in BINARY_EXTENSIONS else None


def detect_bom(data: bytes) -> str | None:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding
    return None


def count_invalid_utf8(data: bytes, final: bool = True) -> int:
    """Number of undecodable sequences (legitimately encoded U+FFFD are not counted).

    With `final=False` a multi-byte character cut off at the end of a sample is not counted.
    """
    try:
        data.decode("utf-8")  # the common case, in C
        return 0
    except UnicodeDecodeError:
        pass
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    text = decoder.decode(data, final)
    return text.count("\ufffd") - data.count(b"\xef\xbf\xbd")


def sniff_bytes(sample: bytes, *, complete: bool) -> Verdict:
    """Classify the first bytes of a file; `complete` says the sample is the whole file."""
    for offset, magic, kind in _MAGIC_BY_PREFIX.get(sample[:2], ()) + _MAGIC_AT_OFFSET:
        if sample.startswith(magic, offset):
            if magic in _WEAK_MAGIC and not _looks_binary(sample, complete):
                continue
            return Verdict(True, detail=kind)
    bom = detect_bom(sample)
    if bom is not None and bom != "utf-8-sig":
        return Verdict(False, bom)  # UTF-16/32 text legitimately contains NUL bytes
    if b"\x00" in sample:
        return Verdict(True, detail=f"NUL byte at offset {sample.index(0)}")
    if not sample:
        return TEXT_UTF8
    controls = len(sample) - len(sample.translate(None, _CONTROL))
    if controls / len(sample) > MAX_CONTROL_RATIO:
        return Verdict(True, detail=f"{controls} control bytes in the first {len(sample)}")
    invalid = count_invalid_utf8(sample, final=complete)
    if invalid and invalid / len(sample) > MAX_INVALID_RATIO:
        return Verdict(
            True, detail=f"not UTF-8 text ({invalid} invalid sequences in the first {len(sample)} bytes)"
        )
    return Verdict(False, "utf-8-sig" if bom else "utf-8")


def _looks_binary(sample: bytes, complete: bool) -> bool:
    return b"\x00" in sample or count_invalid_utf8(sample, final=complete) > 0


def read_head(path: str | os.PathLike[str], limit: int = SNIFF_BYTES) -> bytes:
    """At most the first `limit` bytes of `path` (fewer only at the end of the file).
    OSError propagates."""
    fd = os.open(path, OPEN_FLAGS)
    try:
        chunks: list[bytes] = []
        remaining = limit
        while remaining > 0:
            data = os.read(fd, remaining)
            chunks.append(data)
            if len(data) < remaining:  # end of file (a regular file is never read short)
                break
            remaining -= len(data)
        return b"".join(chunks)
    finally:
        os.close(fd)
