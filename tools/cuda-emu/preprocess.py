# tools/cuda-emu: rewrites a .cu (or .cuh) file into host C++ for the emulator: dynamic shared memory declarations become
# pointers into the running block's buffer, static ones references to the running block's instance (one per block, so that
# the blocks of a cluster, which run together, each have theirs), and kernel<<<cfg>>>(args) becomes
# ::emu::launcher(kernel, cfg)(args).
import re, sys
src = open(sys.argv[1]).read()
src = re.sub(r'extern __shared__ (?:__align__\(\d+\) )?([\w ]+?) (\w+)\[\];',
             lambda m: f'{m.group(1)}* {m.group(2)} = reinterpret_cast<{m.group(1)}*>(::emu::dyn_smem());', src)
# __shared__ [__align__(n)] T a[N][M], b;  ->  static char emu_tag_a; T (&a)[N][M] = ::emu::block_shared<T[N][M]>(&emu_tag_a); ...
decl = r'\w+\s*(?:\[[^\]]*\]\s*)*'
def static_shared(m):
    t, out = m.group(1), []
    for d in m.group(2).split(','):
        d = d.strip()
        name = re.match(r'\w+', d).group(0)
        dims = d[len(name):].replace(' ', '')
        ref = f'(&{name}){dims}' if dims else f'&{name}'
        out.append(f'static char emu_tag_{name}; {t} {ref} = ::emu::block_shared<{t}{dims}>(&emu_tag_{name});')
    return ' '.join(out)
src = re.sub(r'(?<!extern )__shared__\s+(?:__align__\(\d+\)\s+)?([\w:]+(?:\s+[\w:]+)*?)\s+(' + decl + r'(?:,\s*' + decl + r')*);',
             static_shared, src)
out, i = [], 0
while True:
    j = src.find('<<<', i)
    if j < 0:
        out.append(src[i:]); break
    # walk back over the kernel expression: identifier chars, '::' and balanced <...>
    k, depth = j, 0
    while k > 0:
        c = src[k - 1]
        if c == '>': depth += 1
        elif c == '<':
            depth -= 1
        elif depth == 0 and not (c.isalnum() or c in '_:'):
            break
        k -= 1
    e = src.find('>>>', j)
    out.append(src[i:k])
    out.append('::emu::launcher(' + src[k:j] + ', ' + src[j + 3:e] + ')')
    i = e + 3
open(sys.argv[2], 'w').write(''.join(out))
