/**
 * Structural checks of a built executable, written apart from the code that builds and signs it
 * (compile/macho-sign.ts): it reads the file as the loader would and lists what is wrong.
 *
 * Mach-O: header and architecture; every load command inside `sizeofcmds`; every segment inside
 * the file and none overlapping; __LINKEDIT last and ending at the end of the file; every
 * __LINKEDIT data command (symbols, fixups, exports, function starts, the signature) inside it;
 * the code signature: a SuperBlob whose CodeDirectory uses SHA-256 over 4 KiB pages up to the
 * signature's offset, every page hash equal to the file's page, the requirements' special slot
 * equal to the requirements blob's hash, the identifier, the ad-hoc flag and the exec segment.
 * ELF: class, byte order, machine, type and program interpreter.
 * Both: the Node single-executable fuse is flipped (the application was injected).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

export type Arch = "x64" | "arm64";

export interface BinaryReport {
  format: "macho" | "elf" | "unknown";
  arch: Arch | "unknown";
  problems: string[];
  /** Mach-O: the CodeDirectory's identifier and page count, when a signature was read. */
  signature?: { identifier: string; pages: number; flags: number };
  seaInjected: boolean;
}

/** Node flips the trailing 0 of this fuse to 1 in a binary that carries an application. */
const SEA_FUSE = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2:";

export function inspectBinary(path: string): BinaryReport {
  const file = readFileSync(path);
  const seaInjected = file.includes(`${SEA_FUSE}1`) && !file.includes(`${SEA_FUSE}0`);
  if (file.length >= 4 && file.readUInt32LE(0) === 0xfeedfacf) {
    return { ...inspectMachO(file), seaInjected };
  }
  if (file.subarray(0, 4).equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]))) {
    return { ...inspectElf(file), seaInjected };
  }
  return { format: "unknown", arch: "unknown", problems: ["not Mach-O nor ELF"], seaInjected };
}

const CPU_TYPES: Record<number, Arch> = { 0x01000007: "x64", 0x0100000c: "arm64" };

interface Seg {
  name: string;
  fileoff: number;
  filesize: number;
}

function inspectMachO(file: Buffer): Omit<BinaryReport, "seaInjected"> {
  const problems: string[] = [];
  const arch = CPU_TYPES[file.readUInt32LE(4)] ?? "unknown";
  if (file.readUInt32LE(12) !== 2) problems.push("filetype is not MH_EXECUTE");
  const ncmds = file.readUInt32LE(16);
  const sizeofcmds = file.readUInt32LE(20);
  const segments: Seg[] = [];
  const linkeditData: { what: string; off: number; size: number }[] = [];
  let text: Seg | undefined;
  let codeSignature: { off: number; size: number } | undefined;
  let firstSection = Infinity;
  let at = 32;
  for (let i = 0; i < ncmds; i++) {
    const cmd = file.readUInt32LE(at);
    const size = file.readUInt32LE(at + 4);
    if (size < 8 || size % 8 !== 0 || at + size > 32 + sizeofcmds) {
      problems.push(`load command ${i} (0x${cmd.toString(16)}) overruns sizeofcmds`);
      break;
    }
    if (cmd === 0x19) {
      const seg = {
        name: file.toString("latin1", at + 8, at + 24).replace(/\0.*$/s, ""),
        fileoff: Number(file.readBigUInt64LE(at + 40)),
        filesize: Number(file.readBigUInt64LE(at + 48)),
      };
      const vmsize = Number(file.readBigUInt64LE(at + 32));
      if (seg.filesize > vmsize) problems.push(`segment ${seg.name}: filesize > vmsize`);
      for (let s = 0; s < file.readUInt32LE(at + 64); s++) {
        const sect = at + 72 + s * 80;
        const off = file.readUInt32LE(sect + 48);
        if (off > 0) firstSection = Math.min(firstSection, off);
      }
      segments.push(seg);
      if (seg.name === "__TEXT") text = seg;
    } else if (cmd === 0x02) {
      // LC_SYMTAB: symoff, nsyms (16 bytes each), stroff, strsize
      linkeditData.push({
        what: "symbols",
        off: file.readUInt32LE(at + 8),
        size: file.readUInt32LE(at + 12) * 16,
      });
      linkeditData.push({
        what: "strings",
        off: file.readUInt32LE(at + 16),
        size: file.readUInt32LE(at + 20),
      });
    } else if ([0x1d, 0x26, 0x29, 0x80000033, 0x80000034].includes(cmd)) {
      const entry = { off: file.readUInt32LE(at + 8), size: file.readUInt32LE(at + 12) };
      linkeditData.push({ what: `command 0x${cmd.toString(16)}`, ...entry });
      if (cmd === 0x1d) codeSignature = entry;
    }
    at += size;
  }
  if (at !== 32 + sizeofcmds) problems.push("load commands do not add up to sizeofcmds");
  if (32 + sizeofcmds > firstSection) problems.push("load commands overlap the first section");
  const sorted = [...segments].filter((s) => s.filesize > 0).sort((a, b) => a.fileoff - b.fileoff);
  sorted.forEach((seg, i) => {
    if (seg.fileoff + seg.filesize > file.length) problems.push(`segment ${seg.name} past EOF`);
    const next = sorted[i + 1];
    if (next && seg.fileoff + seg.filesize > next.fileoff) {
      problems.push(`segments ${seg.name} and ${next.name} overlap`);
    }
  });
  const linkedit = segments.find((s) => s.name === "__LINKEDIT");
  if (!linkedit || sorted.at(-1) !== linkedit) problems.push("__LINKEDIT is not the last segment");
  else if (linkedit.fileoff + linkedit.filesize !== file.length) {
    problems.push("__LINKEDIT does not end at the end of the file");
  }
  for (const data of linkeditData) {
    if (
      data.size > 0 && linkedit &&
      (data.off < linkedit.fileoff || data.off + data.size > linkedit.fileoff + linkedit.filesize)
    ) problems.push(`${data.what} lies outside __LINKEDIT`);
  }
  if (!codeSignature) return { format: "macho", arch, problems: [...problems, "not signed"] };
  if (codeSignature.off + codeSignature.size !== file.length) {
    problems.push("the code signature is not at the end of the file");
  }
  const signature = checkSignature(file, codeSignature.off, text, problems);
  return { format: "macho", arch, problems, signature };
}

function checkSignature(
  file: Buffer,
  offset: number,
  text: Seg | undefined,
  problems: string[],
): BinaryReport["signature"] {
  const blob = file.subarray(offset);
  if (blob.readUInt32BE(0) !== 0xfade0cc0) {
    problems.push("the code signature is not an embedded SuperBlob");
    return undefined;
  }
  const slots = new Map<number, Buffer>();
  for (let i = 0; i < blob.readUInt32BE(8); i++) {
    const type = blob.readUInt32BE(12 + i * 8);
    const start = blob.readUInt32BE(16 + i * 8);
    slots.set(type, blob.subarray(start, start + blob.readUInt32BE(start + 4)));
  }
  const cd = slots.get(0);
  if (!cd || cd.readUInt32BE(0) !== 0xfade0c02) {
    problems.push("no CodeDirectory in slot 0");
    return undefined;
  }
  const flags = cd.readUInt32BE(12);
  const hashOffset = cd.readUInt32BE(16);
  const identifier = cd.toString("utf8", cd.readUInt32BE(20), cd.indexOf(0, cd.readUInt32BE(20)));
  const nSpecial = cd.readUInt32BE(24);
  const nCode = cd.readUInt32BE(28);
  const codeLimit = cd.readUInt32BE(32);
  const hashSize = cd[36]!;
  const hashType = cd[37]!;
  const pageSize = 2 ** cd[39]!;
  if (hashType !== 2 || hashSize !== 32) problems.push("CodeDirectory hash is not SHA-256");
  if (codeLimit !== offset) problems.push("codeLimit is not the signature's offset");
  if (nCode !== Math.ceil(codeLimit / pageSize)) {
    problems.push("page count does not cover the file");
  }
  if ((flags & 0x2) === 0) problems.push("CodeDirectory is not ad hoc");
  let bad = 0;
  for (let page = 0; page < nCode; page++) {
    const data = file.subarray(page * pageSize, Math.min((page + 1) * pageSize, codeLimit));
    const want = cd.subarray(hashOffset + page * hashSize, hashOffset + (page + 1) * hashSize);
    if (!createHash("sha256").update(data).digest().equals(want)) bad++;
  }
  if (bad > 0) problems.push(`${bad} of ${nCode} page hashes do not match the file`);
  const requirements = slots.get(2);
  if (requirements && nSpecial >= 2) {
    const want = cd.subarray(hashOffset - 2 * hashSize, hashOffset - hashSize);
    if (!createHash("sha256").update(requirements).digest().equals(want)) {
      problems.push("the requirements' hash does not match");
    }
  }
  if (cd.readUInt32BE(8) >= 0x20400 && text) {
    const base = Number(cd.readBigUInt64BE(64));
    const limit = Number(cd.readBigUInt64BE(72));
    if (base !== text.fileoff || limit !== text.filesize) {
      problems.push("the exec segment is not __TEXT");
    }
    if ((Number(cd.readBigUInt64BE(80)) & 1) === 0) problems.push("not marked a main binary");
  }
  return { identifier, pages: nCode, flags };
}

const ELF_MACHINES: Record<number, Arch> = { 62: "x64", 183: "arm64" };

function inspectElf(file: Buffer): Omit<BinaryReport, "seaInjected"> {
  const problems: string[] = [];
  if (file[4] !== 2) problems.push("not a 64-bit ELF file");
  if (file[5] !== 1) problems.push("not little-endian");
  const type = file.readUInt16LE(16);
  if (type !== 2 && type !== 3) problems.push(`ELF type ${type} is not an executable`);
  const arch = ELF_MACHINES[file.readUInt16LE(18)] ?? "unknown";
  const phoff = Number(file.readBigUInt64LE(32));
  const phentsize = file.readUInt16LE(54);
  let interpreter = "";
  for (let i = 0; i < file.readUInt16LE(56); i++) {
    const ph = phoff + i * phentsize;
    const offset = Number(file.readBigUInt64LE(ph + 8));
    const size = Number(file.readBigUInt64LE(ph + 32));
    if (offset + size > file.length) problems.push(`program header ${i} lies past the end`);
    if (file.readUInt32LE(ph) === 3) {
      interpreter = file.toString("latin1", offset, offset + size).replace(/\0+$/, "");
    }
  }
  const expected = arch === "arm64" ? "/lib/ld-linux-aarch64.so.1" : "/lib64/ld-linux-x86-64.so.2";
  if (interpreter !== expected) problems.push(`interpreter ${interpreter}, expected ${expected}`);
  return { format: "elf", arch, problems };
}
