# tools/cuda-emu: rewrites a .cu file into host C++ for the emulator: dynamic shared memory declarations become pointers into the
# launch's buffer, and kernel<<<cfg>>>(args) becomes ::emu::launcher(kernel, cfg)(args).
import re, sys
src = open(sys.argv[1]).read()
src = re.sub(r'extern __shared__ (?:__align__\(\d+\) )?([\w ]+?) (\w+)\[\];',
             lambda m: f'{m.group(1)}* {m.group(2)} = reinterpret_cast<{m.group(1)}*>(::emu::dyn_smem());', src)
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
