// Checks each entry point's declarations (the "types" of package.json's
// exports) against its code (the "default"): the same value exports, a
// class where the code has a class, and each class's methods on both
// sides. Usage: node typecheck/exports.mjs [ENTRY=FILE.d.ts ...], where an
// ENTRY=FILE argument checks FILE in place of that entry's declarations
// (the Go test's negative controls). Exit 1, with each mismatch on stderr.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const override = Object.fromEntries(process.argv.slice(2).map((a) => a.split('=')));
const problems = [];
const checked = [];

const entries = Object.entries(pkg.exports).filter(([, target]) => typeof target === 'object' && target.types);
const dtsOf = (entry, target) => resolve(override[entry] ?? join(root, target.types));
// One program for every entry: the type checker is made once.
const program = ts.createProgram(entries.map(([entry, target]) => dtsOf(entry, target)), {
  strict: true, noEmit: true, types: [], lib: ['lib.es2022.d.ts', 'lib.esnext.disposable.d.ts'],
});
const checker = program.getTypeChecker();

for (const [entry, target] of entries) {
  // The database fences' entries import their drivers, which are peer
  // dependencies: only the entries that need none are loaded here.
  const code = await import(pathToFileURL(join(root, target.default))).catch((err) => {
    if (err.code === 'ERR_MODULE_NOT_FOUND' && !err.message.includes(root)) return null;
    throw err;
  });
  if (code === null) continue;
  const mod = checker.getSymbolAtLocation(program.getSourceFile(dtsOf(entry, target)));
  const declared = new Map();
  for (const sym of mod ? checker.getExportsOfModule(mod) : []) {
    if (sym.flags & ts.SymbolFlags.Value) declared.set(sym.getName(), sym);
  }
  const where = `${entry} (${target.types} against ${target.default})`;
  checked.push(`${entry} (${declared.size} exports)`);
  for (const name of Object.keys(code)) {
    if (!declared.has(name)) problems.push(`${where}: the code exports ${name}, which is not declared`);
  }
  for (const [name, sym] of declared) {
    if (!(name in code)) {
      problems.push(`${where}: ${name} is declared but the code does not export it`);
      continue;
    }
    const isClass = (sym.flags & ts.SymbolFlags.Class) !== 0;
    const isFunc = (sym.flags & ts.SymbolFlags.Function) !== 0;
    const value = code[name];
    if ((isClass || isFunc) !== (typeof value === 'function')) {
      problems.push(`${where}: ${name} is declared as a ${isClass ? 'class' : isFunc ? 'function' : 'value'}, but the code's is a ${typeof value}`);
      continue;
    }
    if (isClass) checkClass(where, name, sym, value);
  }
}

// checkClass compares the methods an instance has in the declarations and
// in the code (its prototype chain up to Error or Object).
function checkClass(where, name, sym, cls) {
  const type = checker.getDeclaredTypeOfSymbol(sym);
  const declared = new Set();
  for (const p of checker.getPropertiesOfType(type)) {
    const d = p.valueDeclaration ?? p.declarations?.[0];
    if (d && (ts.isMethodDeclaration(d) || ts.isMethodSignature(d)) && !p.getName().startsWith('__@')) declared.add(p.getName());
  }
  const actual = new Set();
  for (let proto = cls.prototype; proto && proto !== Object.prototype && proto !== Error.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const key of Object.getOwnPropertyNames(proto)) {
      const desc = Object.getOwnPropertyDescriptor(proto, key);
      if (key !== 'constructor' && !key.startsWith('_') && typeof desc.value === 'function') actual.add(key);
    }
  }
  for (const m of declared) {
    if (!actual.has(m)) problems.push(`${where}: ${name}.${m}() is declared but the code's ${name} has no such method`);
  }
  for (const m of actual) {
    if (!declared.has(m)) problems.push(`${where}: the code's ${name} has a method ${m}() that is not declared`);
  }
}

if (problems.length > 0) {
  for (const p of problems) console.error(p);
  process.exit(1);
}
console.log(`the declarations match the code: ${checked.join(', ')}`);
