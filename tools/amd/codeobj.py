"""Read an AMDGPU code object (an ELF shared object, code object v5/v6) without ROCm.

``read(blob)`` returns, per kernel, what the loader and the hardware use: the metadata note
(``NT_AMDGPU_METADATA``, MessagePack: ``amdhsa.kernels``), the 64-byte kernel descriptor
(``<kernel>.kd``: LDS and scratch sizes, the granulated register counts, the wave32 bit) and the
size of the kernel's machine code (its ``STT_FUNC`` symbol). Only the standard library.
"""

from __future__ import annotations

import struct

NT_AMDGPU_METADATA = 32
EM_AMDGPU = 224
STT_OBJECT, STT_FUNC = 1, 2


class CodeObjectError(ValueError):
    pass


# ---- MessagePack, the subset the AMDGPU metadata uses ---------------------------------------
def _unpack(buf: bytes, i: int = 0):
    b = buf[i]
    if b <= 0x7F:
        return b, i + 1
    if 0x80 <= b <= 0x8F:
        return _map(buf, i + 1, b & 0x0F)
    if 0x90 <= b <= 0x9F:
        return _array(buf, i + 1, b & 0x0F)
    if 0xA0 <= b <= 0xBF:
        n = b & 0x1F
        return buf[i + 1:i + 1 + n].decode(), i + 1 + n
    if b >= 0xE0:
        return b - 0x100, i + 1
    simple = {0xC0: None, 0xC2: False, 0xC3: True}
    if b in simple:
        return simple[b], i + 1
    fixed = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h", 0xD2: ">i",
             0xD3: ">q", 0xCA: ">f", 0xCB: ">d"}
    if b in fixed:
        fmt = fixed[b]
        n = struct.calcsize(fmt)
        return struct.unpack_from(fmt, buf, i + 1)[0], i + 1 + n
    if b in (0xD9, 0xDA, 0xDB, 0xC4, 0xC5, 0xC6):  # str8/16/32, bin8/16/32
        fmt = {0xD9: ">B", 0xDA: ">H", 0xDB: ">I", 0xC4: ">B", 0xC5: ">H", 0xC6: ">I"}[b]
        w = struct.calcsize(fmt)
        (n,) = struct.unpack_from(fmt, buf, i + 1)
        raw = buf[i + 1 + w:i + 1 + w + n]
        return (raw.decode() if b >= 0xD9 else bytes(raw)), i + 1 + w + n
    if b in (0xDC, 0xDD):
        fmt = ">H" if b == 0xDC else ">I"
        (n,) = struct.unpack_from(fmt, buf, i + 1)
        return _array(buf, i + 1 + struct.calcsize(fmt), n)
    if b in (0xDE, 0xDF):
        fmt = ">H" if b == 0xDE else ">I"
        (n,) = struct.unpack_from(fmt, buf, i + 1)
        return _map(buf, i + 1 + struct.calcsize(fmt), n)
    raise CodeObjectError(f"MessagePack byte 0x{b:02x} at {i} is not supported")


def _array(buf, i, n):
    out = []
    for _ in range(n):
        v, i = _unpack(buf, i)
        out.append(v)
    return out, i


def _map(buf, i, n):
    out = {}
    for _ in range(n):
        k, i = _unpack(buf, i)
        v, i = _unpack(buf, i)
        out[k] = v
    return out, i


# ---- ELF ---------------------------------------------------------------------------------
def _sections(blob: bytes):
    if blob[:4] != b"\x7fELF" or blob[4] != 2 or blob[5] != 1:
        raise CodeObjectError("not a little-endian ELF64 file")
    (e_machine,) = struct.unpack_from("<H", blob, 18)
    if e_machine != EM_AMDGPU:
        raise CodeObjectError(f"ELF machine {e_machine}, not AMDGPU ({EM_AMDGPU})")
    shoff, = struct.unpack_from("<Q", blob, 40)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 58)
    secs = []
    for k in range(shnum):
        name, typ, _flags, addr, off, size, link, _info, _align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", blob, shoff + k * shentsize)
        secs.append(dict(name_off=name, type=typ, addr=addr, off=off, size=size, link=link,
                         entsize=entsize))
    strtab = secs[shstrndx]
    for s in secs:
        s["name"] = _cstr(blob, strtab["off"] + s["name_off"])
    return secs


def _cstr(blob: bytes, off: int) -> str:
    end = blob.index(b"\0", off)
    return blob[off:end].decode()


def _symbols(blob, secs):
    out = []
    for s in secs:
        if s["type"] != 2:  # SHT_SYMTAB
            continue
        strtab = secs[s["link"]]
        for k in range(s["size"] // s["entsize"]):
            name, info, _other, shndx, value, size = struct.unpack_from(
                "<IBBHQQ", blob, s["off"] + k * s["entsize"])
            out.append(dict(name=_cstr(blob, strtab["off"] + name), type=info & 0xF,
                            shndx=shndx, value=value, size=size))
    return out


def _metadata(blob, secs) -> dict:
    for s in secs:
        if s["type"] != 7:  # SHT_NOTE
            continue
        i, end = s["off"], s["off"] + s["size"]
        while i < end:
            namesz, descsz, typ = struct.unpack_from("<III", blob, i)
            name = blob[i + 12:i + 12 + namesz].rstrip(b"\0")
            desc_off = i + 12 + ((namesz + 3) & ~3)
            if name == b"AMDGPU" and typ == NT_AMDGPU_METADATA:
                meta, _ = _unpack(blob[desc_off:desc_off + descsz])
                return meta
            i = desc_off + ((descsz + 3) & ~3)
    raise CodeObjectError("no AMDGPU metadata note")


def _descriptor(raw: bytes) -> dict:
    group, private, kernarg = struct.unpack_from("<III", raw, 0)
    rsrc3, rsrc1, rsrc2 = struct.unpack_from("<III", raw, 44)
    (props,) = struct.unpack_from("<H", raw, 56)
    return dict(group_segment_fixed_size=group, private_segment_fixed_size=private,
                kernarg_size=kernarg, granulated_vgprs=rsrc1 & 0x3F,
                granulated_sgprs=(rsrc1 >> 6) & 0xF, wgp_mode=bool((rsrc1 >> 29) & 1),
                wave32=bool((props >> 10) & 1), rsrc1=rsrc1, rsrc2=rsrc2, rsrc3=rsrc3)


def read(blob: bytes) -> dict:
    """``{"target": "amdgcn-amd-amdhsa--gfx1151", "kernels": {name: {...}}}`` where each kernel
    has ``metadata`` (its ``amdhsa.kernels`` entry), ``descriptor`` and ``code_bytes``."""
    secs = _sections(blob)
    syms = _symbols(blob, secs)
    meta = _metadata(blob, secs)
    by_name = {s["name"]: s for s in syms}
    kernels = {}
    for k in meta.get("amdhsa.kernels", []):
        name = k[".name"]
        kd = by_name.get(k.get(".symbol", name + ".kd"))
        fn = by_name.get(name)
        if kd is None or fn is None:
            raise CodeObjectError(f"kernel {name}: no descriptor or code symbol")
        sec = secs[kd["shndx"]]
        off = sec["off"] + kd["value"] - sec["addr"]
        kernels[name] = dict(metadata=k, descriptor=_descriptor(blob[off:off + 64]),
                             code_bytes=fn["size"])
    return dict(target=meta.get("amdhsa.target", ""), version=meta.get("amdhsa.version"),
                kernels=kernels)
