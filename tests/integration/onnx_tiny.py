"""Tiny ONNX models written by hand (protobuf wire format, field numbers
from onnx.proto), for tests that need a model file but not torch.

mlp(path, k, n, c) writes  x[batch, k] -> MatMul W1[k, n] -> Relu -> MatMul
W2[n, c] -> y  with weights declared by shape only (no data: the estimator
never reads weight values), so a model of gigabytes of weights is a file of
a few hundred bytes. unsupported(path) writes a graph with an operator the
estimator does not cost (Loop: control flow).
"""
def _varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wt):
    return _varint(field << 3 | wt)


def _int(field, v):
    return _key(field, 0) + _varint(v)


def _bytes(field, b):
    return _key(field, 2) + _varint(len(b)) + b


def _str(field, s):
    return _bytes(field, s.encode())


FLOAT = 1


def _value_info(name, dims):
    shape = b"".join(_bytes(1, _str(2, "batch") if d is None else _int(1, d)) for d in dims)
    tensor_type = _int(1, FLOAT) + _bytes(2, shape)
    return _str(1, name) + _bytes(2, _bytes(1, tensor_type))


def _initializer(name, dims):
    packed = b"".join(_varint(d) for d in dims)
    return _bytes(1, packed) + _int(2, FLOAT) + _str(8, name)


def _node(op, name, ins, outs):
    return (b"".join(_str(1, i) for i in ins) + b"".join(_str(2, o) for o in outs) +
            _str(3, name) + _str(4, op))


def _model(nodes, inits, inputs, outputs):
    g = b"".join(_bytes(1, n) for n in nodes)
    g += _str(2, "g")
    g += b"".join(_bytes(5, t) for t in inits)
    g += b"".join(_bytes(11, v) for v in inputs)
    g += b"".join(_bytes(12, v) for v in outputs)
    opset = _str(1, "") + _int(2, 13)
    return _int(1, 8) + _bytes(8, opset) + _bytes(7, g)


def mlp(path, k, n, c):
    data = _model(
        [_node("MatMul", "fc1", ["x", "w1"], ["h"]), _node("Relu", "act", ["h"], ["a"]),
         _node("MatMul", "fc2", ["a", "w2"], ["y"])],
        [_initializer("w1", [k, n]), _initializer("w2", [n, c])],
        [_value_info("x", [None, k])], [_value_info("y", [None, c])])
    with open(path, "wb") as f:
        f.write(data)


def unsupported(path):
    data = _model([_node("Loop", "mix", ["x", "x"], ["y"])], [],
                  [_value_info("x", [None, 4])], [_value_info("y", [None, 4])])
    with open(path, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    import sys
    mlp(sys.argv[1], *(int(a) for a in sys.argv[2:5]))
