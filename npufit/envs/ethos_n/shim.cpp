// npufit <-> Arm Ethos-N support library bridge.
//
// Why a separate program fed through a subprocess (and not a Python extension): the library is C++14 with
// exceptions and asserts, it may abort on an internal error and its Compile() can take minutes; as a child process
// a crash or a hang is reported as data (exit code, log, timeout) and never takes npufit down, the build needs
// only g++ (no Python headers, no pybind11), and wall time / peak memory are those of the compiler alone, as
// for Vela and RKNN. The request is a line-based text file (no JSON parser to vendor or write in C++); the
// response is JSON, which is trivial to write.
//
// Request (one statement per line, tokens separated by spaces; see npufit/compilers/ethos_n_lower.py):
//   npufit-ethosn 1
//   variant Ethos-N78_4TOPS_4PLE_RATIO
//   sram 0                                  (bytes; 0 = the variant's default)
//   blob /abs/path/weights.bin              (constant data, referenced by offset)
//   tensor ID DTYPE FORMAT N H W C ZP QDIM NSCALES S1 .. Sn [const OFFSET NBYTES]
//   op ID KIND in=T1,T2 out=T3 key=v1,v2 ...
//   output T                                (a tensor the host reads: a model output)
// Response: {"version", "variant", "ops": [{"id", "level", "reason"}], "compile": {...}, "estimate": {...}}

#include "shim_io.hpp"

namespace
{

// Builds one support-library Network op by op. Ops the library does not fully support (or that npufit marks as
// host ops) stay out; their consumers read the tensor as a network Input, and tensors the host reads become
// network Outputs: the same cut that Arm NN and TVM make around unsupported layers.
class Builder
{
public:
    // excluded: ops whose operation a previous build could not add (op id -> why); they stay out from the start,
    // because the library has no way to remove what a failed Add*() had already put in the network (its weights and
    // bias constants), and such orphans break Compile() ("`buffer` is not part of this graph (or is nullptr)")
    Builder(const Request& r, const std::vector<char>& caps, bool estimation,
            const std::map<std::string, std::string>& excluded = {})
        : m_Req(r)
        , m_Queries(caps)
        , m_Excluded(excluded)
    {
        m_Net = estimation ? sl::CreateEstimationNetwork(caps) : sl::CreateNetwork(caps);
    }

    std::vector<Verdict> Build()
    {
        // tensors read more than once by operations that may run on the NPU, a split or a concatenation among
        // them or producing them
        std::map<std::string, int> reads;
        std::set<std::string> joined;
        for (const Op& op : m_Req.ops)
        {
            if (op.kind == "host")
                continue;
            for (auto& t : op.in)
            {
                ++reads[t];
                if (op.kind == "concat" || op.kind == "split")
                    joined.insert(t);
            }
            if (op.kind == "split")
                joined.insert(op.out.begin(), op.out.end());
        }
        for (auto& kv : reads)
            if (kv.second > 1 && joined.count(kv.first))
                m_Fanout.insert(kv.first);
        std::vector<Verdict> verdicts;
        for (const Op& op : m_Req.ops)
        {
            Verdict v = Query(op);
            auto ex   = m_Excluded.find(op.id);
            if (v.level == "supported" && ex != m_Excluded.end())
                v = { "unsupported", ex->second };
            else if (v.level == "supported")
            {
                try
                {
                    Add(op);
                }
                catch (const std::exception& e)
                {
                    v.level  = "unsupported";
                    v.reason = std::string("network build: ") + e.what();
                    m_Failed[op.id] = v.reason;
                }
            }
            verdicts.push_back(v);
        }
        // how often the NPU operations read each tensor (an operation reading it twice counts twice)
        std::map<std::string, int> npuReads;
        for (size_t i = 0; i < m_Req.ops.size(); ++i)
            if (verdicts[i].level == "supported")
                for (auto& t : m_Req.ops[i].in)
                    ++npuReads[t];
        // Outputs: NPU tensors read by the host (model outputs, or inputs of ops that did not go to the NPU).
        std::set<std::string> hostReads = m_Req.outputs;
        for (size_t i = 0; i < m_Req.ops.size(); ++i)
            if (verdicts[i].level != "supported")
                for (auto& t : m_Req.ops[i].in)
                    hostReads.insert(t);
        for (auto& t : hostReads)
        {
            auto it = m_Operands.find(t);
            if (it != m_Operands.end())
            {
                sl::Operand* out = it->second.get();
                if (m_Fanout.count(t) && npuReads[t] > 0)
                {
                    // Such a tensor that the host reads too is handed out through a copy, as a further reader (In()):
                    // given that very operand as a network output, Compile() breaks the same way
                    const sl::TensorInfo& x = Info(t);
                    sl::RequantizeInfo ri(x.m_QuantizationInfo);
                    ri.m_OutputDataType = x.m_DataType;
                    auto copy           = sl::AddRequantize(m_Net, *out, ri);
                    m_Owner[copy.operationId] = "copy:" + t;
                    out                       = copy.tensor.get();
                }
                m_Owner[sl::AddOutput(m_Net, *out).operationId] = "output:" + t;
                ++m_NumOutputs;
            }
        }
        // A lone slice is a Split whose other parts nobody reads; Compile() refuses dangling outputs, so they are
        // written out (their DRAM traffic is in the estimate).
        for (auto& u : m_Unused)
        {
            sl::AddOutput(m_Net, *u);
            ++m_NumOutputs;
        }
        return verdicts;
    }

    std::shared_ptr<sl::Network> Net() const
    {
        return m_Net;
    }
    size_t NumOutputs() const
    {
        return m_NumOutputs;
    }
    size_t NumInputs() const
    {
        return m_NumInputs;
    }
    // support-library operation id -> npufit op id ("input:T", "const:T", "output:T" for the network's own)
    const std::map<uint32_t, std::string>& Owners() const
    {
        return m_Owner;
    }
    // the split operations added to the network whose parts feed more than one operation (see In())
    std::vector<std::string> FannedSplits() const
    {
        std::vector<std::string> ids;
        for (size_t i = 0; i < m_Req.ops.size(); ++i)
        {
            const Op& op = m_Req.ops[i];
            if (op.kind != "split" || m_Excluded.count(op.id))
                continue;
            for (auto& t : op.out)
                if (m_Fanout.count(t))
                {
                    ids.push_back(op.id);
                    break;
                }
        }
        return ids;
    }
    // ops whose Add*() threw in this build (op id -> the reason), to be left out of the next one
    const std::map<std::string, std::string>& Failed() const
    {
        return m_Failed;
    }

private:
    const sl::TensorInfo& Info(const std::string& t) const
    {
        auto it = m_Req.tensors.find(t);
        if (it == m_Req.tensors.end())
            throw std::runtime_error("unknown tensor " + t);
        return it->second.info;
    }

    sl::TensorInfo BiasInfo(const Op& op) const
    {
        // The library wants bias scale == input scale x weight scale exactly: derive it here with its own
        // arithmetic rather than trusting the float32 rounding of the file's bias scale.
        sl::TensorInfo b      = Info(op.in[2]);
        const auto& inQ       = Info(op.in[0]).m_QuantizationInfo;
        const auto& wQ        = Info(op.in[1]).m_QuantizationInfo;
        sl::QuantizationInfo q(0, inQ.GetScales() * wQ.GetScales());
        if (wQ.GetScales().size() > 1)
            q.SetQuantizationDim(3);
        b.m_QuantizationInfo = q;
        return b;
    }

    sl::QuantizationInfo OutQ(const Op& op) const
    {
        return Info(op.out.at(0)).m_QuantizationInfo;
    }

    Verdict Query(const Op& op) const
    {
        if (op.kind == "host")
            return { "unsupported", op.str("why") };
        char reason[1024] = { 0 };
        sl::SupportedLevel l = sl::SupportedLevel::Unsupported;
        const std::string& k = op.kind;
        try
        {
            if (k == "conv" || k == "dwconv" || k == "tconv")
            {
                sl::ConvolutionInfo ci(Pad(op.ints("pad")), Stride(op.ints("stride")), OutQ(op));
                sl::TensorInfo bias = BiasInfo(op);
                if (k == "conv")
                    l = m_Queries.IsConvolutionSupported(bias, Info(op.in[1]), ci, Info(op.in[0]), nullptr, reason);
                else if (k == "dwconv")
                    l = m_Queries.IsDepthwiseConvolutionSupported(bias, Info(op.in[1]), ci, Info(op.in[0]), nullptr,
                                                                  reason);
                else
                    l = m_Queries.IsTransposeConvolutionSupported(bias, Info(op.in[1]), ci, Info(op.in[0]), nullptr,
                                                                  reason);
            }
            else if (k == "fc")
                l = m_Queries.IsFullyConnectedSupported(BiasInfo(op), Info(op.in[1]), sl::FullyConnectedInfo(OutQ(op)),
                                                        Info(op.in[0]), nullptr, reason);
            else if (k == "relu")
            {
                auto b = op.ints("bounds");
                l      = m_Queries.IsReluSupported(
                    sl::ReluInfo(static_cast<int16_t>(b.at(0)), static_cast<int16_t>(b.at(1))), Info(op.in[0]), nullptr,
                    reason);
            }
            else if (k == "leaky")
                l = m_Queries.IsLeakyReluSupported(sl::LeakyReluInfo(std::stof(op.str("alpha")), OutQ(op)),
                                                   Info(op.in[0]), nullptr, reason);
            else if (k == "requant")
            {
                sl::RequantizeInfo ri(OutQ(op));
                ri.m_OutputDataType = Info(op.out[0]).m_DataType;
                l                   = m_Queries.IsRequantizeSupported(ri, Info(op.in[0]), nullptr, reason);
            }
            else if (k == "sigmoid")
                l = m_Queries.IsSigmoidSupported(Info(op.in[0]), nullptr, reason);
            else if (k == "tanh")
                l = m_Queries.IsTanhSupported(Info(op.in[0]), nullptr, reason);
            else if (k == "meanxy")
                l = m_Queries.IsMeanXySupported(Info(op.in[0]), nullptr, reason);
            else if (k == "pool")
                l = m_Queries.IsPoolingSupported(PoolInfo(op), Info(op.in[0]), nullptr, reason);
            else if (k == "reshape")
                l = m_Queries.IsReshapeSupported(Info(op.out[0]).m_Dimensions, Info(op.in[0]), nullptr, reason);
            else if (k == "concat")
            {
                std::vector<sl::TensorInfo> infos;
                for (auto& t : op.in)
                    infos.push_back(Info(t));
                l = m_Queries.IsConcatenationSupported(
                    infos, sl::ConcatenationInfo(static_cast<uint32_t>(op.ints("axis").at(0)), OutQ(op)), nullptr,
                    reason);
            }
            else if (k == "split")
                l = m_Queries.IsSplitSupported(Info(op.in[0]), SplitInfoOf(op), nullptr, reason);
            else if (k == "add")
                l = m_Queries.IsAdditionSupported(Info(op.in[0]), Info(op.in[1]), OutQ(op), nullptr, reason);
            else if (k == "mul")
                l = m_Queries.IsMultiplicationSupported(Info(op.in[0]), Info(op.in[1]), OutQ(op), nullptr, reason);
            else if (k == "pad")
                l = m_Queries.IsStandalonePaddingSupported(Pad(op.ints("pad")), Info(op.in[0]), nullptr, reason,
                                                           sizeof reason);
            else if (k == "d2s")
                l = m_Queries.IsDepthToSpaceSupported(Info(op.in[0]), sl::DepthToSpaceInfo(Block(op)), nullptr,
                                                      reason);
            else if (k == "s2d")
                l = m_Queries.IsSpaceToDepthSupported(Info(op.in[0]), sl::SpaceToDepthInfo(Block(op)), nullptr,
                                                      reason);
            else if (k == "transpose")
                l = m_Queries.IsTransposeSupported(TransposeInfoOf(op), Info(op.in[0]), nullptr, reason);
            else if (k == "resize")
                l = m_Queries.IsResizeSupported(ResizeInfoOf(op), Info(op.in[0]), nullptr, reason);
            else
                return { "unsupported", "npufit: no support-library operation for kind " + k };
        }
        catch (const std::exception& e)
        {
            return { "unsupported", std::string("support query failed: ") + e.what() };
        }
        // Constant operands of add/mul/concat must be representable too.
        for (auto& t : op.in)
        {
            auto it = m_Req.tensors.find(t);
            if (l == sl::SupportedLevel::Supported && it != m_Req.tensors.end() && it->second.isConst &&
                (k == "add" || k == "mul" || k == "concat"))
            {
                char r2[1024] = { 0 };
                sl::SupportedLevel lc = m_Queries.IsConstantSupported(it->second.info, r2);
                if (!(lc == sl::SupportedLevel::Supported))
                    return { LevelName(lc), r2 };
            }
        }
        return { LevelName(l), reason };
    }

    static uint32_t Block(const Op& op)
    {
        return static_cast<uint32_t>(op.ints("block").at(0));
    }

    sl::PoolingInfo PoolInfo(const Op& op) const
    {
        auto s = op.ints("size"), st = op.ints("stride");
        return sl::PoolingInfo(static_cast<uint32_t>(s.at(0)), static_cast<uint32_t>(s.at(1)),
                               static_cast<uint32_t>(st.at(0)), static_cast<uint32_t>(st.at(1)), Pad(op.ints("pad")),
                               op.str("type") == "avg" ? sl::PoolingType::AVG : sl::PoolingType::MAX);
    }

    sl::SplitInfo SplitInfoOf(const Op& op) const
    {
        std::vector<uint32_t> sizes;
        for (long v : op.ints("sizes"))
            sizes.push_back(static_cast<uint32_t>(v));
        return sl::SplitInfo(static_cast<uint32_t>(op.ints("axis").at(0)), sizes);
    }

    sl::TransposeInfo TransposeInfoOf(const Op& op) const
    {
        auto p = op.ints("perm");
        return sl::TransposeInfo({ static_cast<uint32_t>(p.at(0)), static_cast<uint32_t>(p.at(1)),
                                   static_cast<uint32_t>(p.at(2)), static_cast<uint32_t>(p.at(3)) });
    }

    sl::ResizeInfo ResizeInfoOf(const Op& op) const
    {
        auto& o = Info(op.out[0]);
        return sl::ResizeInfo(op.str("algo") == "bilinear" ? sl::ResizeAlgorithm::BILINEAR
                                                           : sl::ResizeAlgorithm::NEAREST_NEIGHBOUR,
                              o.m_Dimensions[1], o.m_Dimensions[2], o.m_QuantizationInfo);
    }

    std::shared_ptr<sl::Constant> Const(const std::string& t, const sl::TensorInfo* override = nullptr)
    {
        const Tensor& x = m_Req.tensors.at(t);
        if (!x.isConst || x.offset + x.nbytes > m_Req.blob.size())
            throw std::runtime_error("tensor " + t + " has no constant data");
        auto r = sl::AddConstant(m_Net, override ? *override : x.info, m_Req.blob.data() + x.offset);
        m_Owner[r.operationId] = "const:" + t;
        return r.tensor;
    }

    // The operand for an op input: produced by an op already in the network, a constant, or a new Input.
    sl::Operand& In(const std::string& t)
    {
        auto it = m_Operands.find(t);
        if (it != m_Operands.end())
        {
            // A tensor read by several operations where a split or a concatenation is involved (YOLO's C2f: a
            // split part feeds the bottleneck, its residual add and the concatenation) gives every reader after
            // the first an identity requantize of its own: handed the same operand, Compile() breaks on its own
            // graph ("`consumerOp` is not a consumer of `buffer`", "`buffer` is not part of this graph")
            if (m_Fanout.count(t) && m_Reads[t]++ > 0)
                return Copy(t, *it->second);
            return *it->second;
        }
        const Tensor& x = m_Req.tensors.at(t);
        std::shared_ptr<sl::Operand> op;
        if (x.isConst)
            op = sl::GetOperand(Const(t));
        else
        {
            auto r = sl::AddInput(m_Net, x.info);
            op     = r.tensor;
            m_Owner[r.operationId] = "input:" + t;
            ++m_NumInputs;
        }
        m_Operands[t] = op;
        return *op;
    }

    sl::Operand& Copy(const std::string& t, sl::Operand& x)
    {
        const sl::TensorInfo& info = Info(t);
        sl::RequantizeInfo ri(info.m_QuantizationInfo);
        ri.m_OutputDataType       = info.m_DataType;
        auto r                    = sl::AddRequantize(m_Net, x, ri);
        m_Owner[r.operationId]    = "copy:" + t;
        m_Copies.push_back(r.tensor);
        return *r.tensor;
    }

    void Set(const Op& op, const sl::TensorAndId<sl::Operand>& r)
    {
        m_Operands[op.out.at(0)] = r.tensor;
        m_Owner[r.operationId]   = op.id;
    }

    void Add(const Op& op)
    {
        const std::string& k = op.kind;
        if (k == "conv" || k == "dwconv" || k == "tconv" || k == "fc")
        {
            sl::Operand& x      = In(op.in[0]);
            sl::TensorInfo bi   = BiasInfo(op);
            auto bias           = Const(op.in[2], &bi);
            auto weights        = Const(op.in[1]);
            sl::ConvolutionInfo ci(Pad(op.ints("pad")), Stride(op.ints("stride")), OutQ(op));
            if (k == "conv")
                Set(op, sl::AddConvolution(m_Net, x, *bias, *weights, ci));
            else if (k == "dwconv")
                Set(op, sl::AddDepthwiseConvolution(m_Net, x, *bias, *weights, ci));
            else if (k == "tconv")
                Set(op, sl::AddTransposeConvolution(m_Net, x, *bias, *weights, ci));
            else
                Set(op, sl::AddFullyConnected(m_Net, x, *bias, *weights, sl::FullyConnectedInfo(OutQ(op))));
        }
        else if (k == "relu")
        {
            auto b = op.ints("bounds");
            Set(op, sl::AddRelu(m_Net, In(op.in[0]),
                                sl::ReluInfo(static_cast<int16_t>(b.at(0)), static_cast<int16_t>(b.at(1)))));
        }
        else if (k == "leaky")
            Set(op, sl::AddLeakyRelu(m_Net, In(op.in[0]), sl::LeakyReluInfo(std::stof(op.str("alpha")), OutQ(op))));
        else if (k == "requant")
        {
            sl::RequantizeInfo ri(OutQ(op));
            ri.m_OutputDataType = Info(op.out[0]).m_DataType;
            Set(op, sl::AddRequantize(m_Net, In(op.in[0]), ri));
        }
        else if (k == "sigmoid")
            Set(op, sl::AddSigmoid(m_Net, In(op.in[0])));
        else if (k == "tanh")
            Set(op, sl::AddTanh(m_Net, In(op.in[0])));
        else if (k == "meanxy")
            Set(op, sl::AddMeanXy(m_Net, In(op.in[0])));
        else if (k == "pool")
            Set(op, sl::AddPooling(m_Net, In(op.in[0]), PoolInfo(op)));
        else if (k == "reshape")
            Set(op, sl::AddReshape(m_Net, In(op.in[0]), Info(op.out[0]).m_Dimensions));
        else if (k == "concat")
        {
            std::vector<sl::Operand*> xs;
            for (auto& t : op.in)
                xs.push_back(&In(t));
            Set(op, sl::AddConcatenation(m_Net, xs,
                                         sl::ConcatenationInfo(static_cast<uint32_t>(op.ints("axis").at(0)), OutQ(op))));
        }
        else if (k == "split")
        {
            auto r = sl::AddSplit(m_Net, In(op.in[0]), SplitInfoOf(op));
            m_Owner[r.operationId] = op.id;
            for (size_t i = 0; i < op.out.size() && i < r.tensors.size(); ++i)
            {
                if (op.out[i] != "_")
                    m_Operands[op.out[i]] = r.tensors[i];
                else
                    m_Unused.push_back(r.tensors[i]);
            }
        }
        else if (k == "add")
            Set(op, sl::AddAddition(m_Net, In(op.in[0]), In(op.in[1]), OutQ(op)));
        else if (k == "mul")
            Set(op, sl::AddMultiplication(m_Net, In(op.in[0]), In(op.in[1]), OutQ(op)));
        else if (k == "pad")
            Set(op, sl::AddStandalonePadding(m_Net, In(op.in[0]), Pad(op.ints("pad"))));
        else if (k == "d2s")
            Set(op, sl::AddDepthToSpace(m_Net, In(op.in[0]), sl::DepthToSpaceInfo(Block(op))));
        else if (k == "s2d")
            Set(op, sl::AddSpaceToDepth(m_Net, In(op.in[0]), sl::SpaceToDepthInfo(Block(op))));
        else if (k == "transpose")
            Set(op, sl::AddTranspose(m_Net, In(op.in[0]), TransposeInfoOf(op)));
        else if (k == "resize")
            Set(op, sl::AddResize(m_Net, In(op.in[0]), ResizeInfoOf(op)));
        else
            throw std::runtime_error("no builder for kind " + k);
    }

    const Request& m_Req;
    sl::SupportQueries m_Queries;
    std::shared_ptr<sl::Network> m_Net;
    std::map<std::string, std::shared_ptr<sl::Operand>> m_Operands;
    std::map<uint32_t, std::string> m_Owner;
    std::vector<std::shared_ptr<sl::Operand>> m_Unused;
    std::map<std::string, std::string> m_Excluded;
    std::set<std::string> m_Fanout;  // tensors whose further readers read a copy (see In())
    std::map<std::string, int> m_Reads;
    std::vector<std::shared_ptr<sl::Operand>> m_Copies;
    std::map<std::string, std::string> m_Failed;
    size_t m_NumInputs  = 0;
    size_t m_NumOutputs = 0;
};

}    // namespace

// Compile() of a built network: the JSON members of "compile" (ok, networks, bytes, error), and the saved networks.
std::string CompileNetwork(Builder& net, const std::string& savePrefix)
{
    std::ostringstream os;
    try
    {
        sl::CompilationOptions opts;
        sl::g_Logger.AddSink(&ErrorSink);
        auto compiled = sl::Compile(*net.Net(), opts);
        sl::g_Logger.RemoveSink(&ErrorSink);
        size_t bytes = 0, inter = 0;
        for (size_t i = 0; i < compiled.size(); ++i)
        {
            std::ostringstream ser;
            compiled[i]->Serialize(ser);
            bytes += ser.str().size();
            inter += compiled[i]->GetIntermediateBufferSize();
            if (!savePrefix.empty())
                std::ofstream(savePrefix + std::to_string(i) + ".bin", std::ios::binary) << ser.str();
        }
        os << "\"ok\": " << (compiled.empty() ? "false" : "true") << ", \"networks\": " << compiled.size()
           << ", \"serialized_bytes\": " << bytes << ", \"intermediate_bytes\": " << inter;
        if (compiled.empty())
        {
            std::string why;
            for (auto& e : LibraryErrors())
                why += (why.empty() ? "" : "; ") + e;
            os << ", \"error\": \"" << Esc(why.empty() ? "Compile() returned no compiled network" : why) << "\"";
        }
    }
    catch (const std::exception& e)
    {
        sl::g_Logger.RemoveSink(&ErrorSink);
        os << "\"ok\": false, \"error\": \"" << Esc(e.what()) << "\"";
    }
    return os.str();
}

bool IsGraphError(const std::string& compiled)
{
    return compiled.find("is not a consumer of") != std::string::npos ||
           compiled.find("is not part of this graph") != std::string::npos;
}

int main(int argc, char** argv)
{
    if (argc == 2 && std::string(argv[1]) == "--version")
    {
        std::cout << sl::GetLibraryVersion().ToString() << std::endl;
        return 0;
    }
    if (argc < 3)
    {
        std::cerr << "usage: npufit-ethosn REQUEST RESPONSE.json [--no-compile] [--no-estimate]\n";
        return 2;
    }
    bool doCompile = true, doEstimate = true;
    std::string savePrefix;  // --save PREFIX: write each compiled network to PREFIX<i>.bin
    for (int i = 3; i < argc; ++i)
    {
        std::string a = argv[i];
        doCompile     = doCompile && a != "--no-compile";
        doEstimate    = doEstimate && a != "--no-estimate";
        if (a == "--save" && i + 1 < argc)
            savePrefix = argv[++i];
    }
    std::ostringstream os;
    int rc = 0;
    os << "{\"version\": \"" << sl::GetLibraryVersion().ToString() << "\"";
    try
    {
        Request req;
        req.Read(argv[1]);
        auto caps = sl::GetFwAndHwCapabilities(sl::EthosNVariantFromString(req.variant.c_str()), req.sram);
        os << ", \"variant\": \"" << Esc(req.variant) << "\"";

        auto t0 = std::chrono::steady_clock::now();
        // build until no operation fails to be added (each failure is left out of the next build)
        std::map<std::string, std::string> excluded;
        auto net      = std::make_unique<Builder>(req, caps, false, excluded);
        auto verdicts = net->Build();
        for (int attempt = 0; attempt < 8 && !net->Failed().empty(); ++attempt)
        {
            excluded.insert(net->Failed().begin(), net->Failed().end());
            net      = std::make_unique<Builder>(req, caps, false, excluded);
            verdicts = net->Build();
        }
        double buildS = Seconds(t0);
        if (doCompile && net->NumOutputs() > 0)
        {
            os << ", \"compile\": {";
            t0 = std::chrono::steady_clock::now();
            std::string compiled = CompileNetwork(*net, savePrefix);
            // The library's Compile() breaks on its own graph for some splits whose parts feed several operations
            // (its internal "`consumerOp` is not a consumer of `buffer`" / "`buffer` is not part of this graph"),
            // where the copies In() hands out do not suffice: those splits go to the host and the rest compiles
            std::vector<std::string> hosted;
            if (IsGraphError(compiled))
            {
                hosted = net->FannedSplits();
                for (auto& id : hosted)
                    excluded[id] = "npufit: the Ethos-N support library's Compile() fails on this split (its parts "
                                   "feed several operations), so npufit keeps it on the host";
                if (!hosted.empty())
                {
                    net      = std::make_unique<Builder>(req, caps, false, excluded);
                    verdicts = net->Build();
                    compiled = CompileNetwork(*net, savePrefix);
                }
            }
            os << compiled << ", \"hosted_splits\": [";
            for (size_t i = 0; i < hosted.size(); ++i)
                os << (i ? ", " : "") << "\"" << Esc(hosted[i]) << "\"";
            os << "], \"wall_s\": " << Seconds(t0) << "}";
            std::cout << "[npufit-ethosn] Compile() done in " << Seconds(t0) << " s" << std::endl;
        }
        os << ", \"build_s\": " << buildS << ", \"ops\": [";
        for (size_t i = 0; i < verdicts.size(); ++i)
            os << (i ? ",\n  " : "\n  ") << "{\"id\": \"" << Esc(req.ops[i].id) << "\", \"level\": \""
               << verdicts[i].level << "\", \"reason\": \"" << Esc(verdicts[i].reason) << "\"}";
        os << "], \"network\": {\"inputs\": " << net->NumInputs() << ", \"outputs\": " << net->NumOutputs() << "}";
        std::cout << "[npufit-ethosn] network built: " << verdicts.size() << " ops, " << net->NumInputs()
                  << " inputs, " << net->NumOutputs() << " outputs" << std::endl;

        if (doEstimate && net->NumOutputs() > 0)
        {
            os << ", \"estimate\": {";
            t0 = std::chrono::steady_clock::now();
            try
            {
                // A separate estimation network: the same supported ops, built with CreateEstimationNetwork.
                Builder est(req, caps, true, excluded);
                est.Build();
                sl::CompilationOptions opts;
                auto perf = sl::EstimatePerformance(*est.Net(), opts);
                os << "\"ok\": true, ";
                WritePasses(os, perf, est.Owners());
            }
            catch (const std::exception& e)
            {
                os << "\"ok\": false, \"error\": \"" << Esc(e.what()) << "\"";
            }
            os << ", \"wall_s\": " << Seconds(t0) << "}";
            std::cout << "[npufit-ethosn] EstimatePerformance() done in " << Seconds(t0) << " s" << std::endl;
        }
    }
    catch (const std::exception& e)
    {
        os << ", \"error\": \"" << Esc(e.what()) << "\"";
        rc = 1;
    }
    os << "}\n";
    std::ofstream out(argv[2]);
    out << os.str();
    return out ? rc : 1;
}
