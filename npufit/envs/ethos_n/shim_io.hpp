// npufit <-> Arm Ethos-N support library bridge: reading the request file, writing the JSON answer (see shim.cpp).
#pragma once

#include <chrono>

#include <ethosn_support_library/Support.hpp>
#include <ethosn_support_library/SupportQueries.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <ethosn_utils/Log.hpp>

namespace ethosn
{
namespace support_library
{
// The library's own logger (src/Utils.hpp; a release build has no ETHOSN_LOGGING, so its type is Logger<Info>).
// Compile() logs why it found no plan and returns nothing; npufit attaches a sink to report that reason.
extern ethosn::utils::log::Logger<ethosn::utils::log::Severity::Info> g_Logger;
}    // namespace support_library
}    // namespace ethosn

namespace sl = ethosn::support_library;

namespace
{

struct Tensor
{
    sl::TensorInfo info;
    bool isConst = false;
    size_t offset = 0;
    size_t nbytes = 0;
};

struct Op
{
    std::string id;
    std::string kind;
    std::vector<std::string> in, out;
    std::map<std::string, std::vector<std::string>> kv;

    std::vector<long> ints(const std::string& k) const
    {
        std::vector<long> v;
        auto it = kv.find(k);
        if (it != kv.end())
            for (auto& s : it->second)
                v.push_back(std::stol(s));
        return v;
    }
    std::string str(const std::string& k, const std::string& dflt = "") const
    {
        auto it = kv.find(k);
        return (it == kv.end() || it->second.empty()) ? dflt : it->second[0];
    }
};

struct Verdict
{
    std::string level;
    std::string reason;
};

std::vector<std::string> Split(const std::string& s, char sep)
{
    std::vector<std::string> out;
    std::string cur;
    std::istringstream ss(s);
    while (std::getline(ss, cur, sep))
        if (!cur.empty())
            out.push_back(cur);
    return out;
}

std::string Esc(const std::string& s)
{
    std::string o;
    for (char c : s)
    {
        if (c == '"' || c == '\\')
        {
            o += '\\';
            o += c;
        }
        else if (static_cast<unsigned char>(c) < 0x20)
        {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            o += buf;
        }
        else
            o += c;
    }
    return o;
}

sl::DataType ParseType(const std::string& s)
{
    if (s == "int8")
        return sl::DataType::INT8_QUANTIZED;
    if (s == "uint8")
        return sl::DataType::UINT8_QUANTIZED;
    if (s == "int32")
        return sl::DataType::INT32_QUANTIZED;
    throw std::runtime_error("unknown dtype " + s);
}

sl::DataFormat ParseFormat(const std::string& s)
{
    if (s == "HWIO")
        return sl::DataFormat::HWIO;
    if (s == "HWIM")
        return sl::DataFormat::HWIM;
    return sl::DataFormat::NHWC;
}

const char* LevelName(const sl::SupportedLevel& l)
{
    if (l == sl::SupportedLevel::Supported)
        return "supported";
    if (l == sl::SupportedLevel::EstimateOnly)
        return "estimate_only";
    return "unsupported";
}

class Request
{
public:
    std::string variant = "Ethos-N78_4TOPS_4PLE_RATIO";
    uint32_t sram       = 0;
    std::vector<char> blob;
    std::map<std::string, Tensor> tensors;
    std::vector<Op> ops;
    std::set<std::string> outputs;

    void Read(const char* path)
    {
        std::ifstream f(path);
        if (!f)
            throw std::runtime_error(std::string("cannot read ") + path);
        std::string line;
        while (std::getline(f, line))
        {
            std::istringstream ls(line);
            std::string w;
            ls >> w;
            if (w == "variant")
                ls >> variant;
            else if (w == "sram")
                ls >> sram;
            else if (w == "blob")
            {
                std::string p;
                ls >> p;
                std::ifstream b(p, std::ios::binary);
                blob.assign(std::istreambuf_iterator<char>(b), std::istreambuf_iterator<char>());
            }
            else if (w == "tensor")
                ReadTensor(ls);
            else if (w == "op")
                ReadOp(ls);
            else if (w == "output")
            {
                std::string t;
                ls >> t;
                outputs.insert(t);
            }
        }
    }

private:
    void ReadTensor(std::istringstream& ls)
    {
        std::string id, dtype, fmt, flag;
        uint32_t n, h, w, c, nscales;
        int32_t zp;
        long qdim;
        ls >> id >> dtype >> fmt >> n >> h >> w >> c >> zp >> qdim >> nscales;
        std::vector<float> scales(nscales);
        for (auto& s : scales)
            ls >> s;
        sl::QuantizationInfo q(zp, sl::QuantizationScales(scales));
        if (qdim >= 0)
            q.SetQuantizationDim(static_cast<unsigned>(qdim));
        Tensor t;
        t.info = sl::TensorInfo({ n, h, w, c }, ParseType(dtype), ParseFormat(fmt), q);
        if (ls >> flag && flag == "const")
        {
            t.isConst = true;
            ls >> t.offset >> t.nbytes;
        }
        tensors[id] = t;
    }

    void ReadOp(std::istringstream& ls)
    {
        Op op;
        ls >> op.id >> op.kind;
        std::string tok;
        while (ls >> tok)
        {
            auto eq = tok.find('=');
            if (eq == std::string::npos)
                continue;
            std::string k = tok.substr(0, eq);
            auto vals     = Split(tok.substr(eq + 1), ',');
            if (k == "in")
                op.in = vals;
            else if (k == "out")
                op.out = vals;
            else
                op.kv[k] = vals;
        }
        ops.push_back(op);
    }
};

sl::Padding Pad(const std::vector<long>& p)
{
    if (p.size() != 4)
        return {};
    return sl::Padding(static_cast<uint32_t>(p[0]), static_cast<uint32_t>(p[1]), static_cast<uint32_t>(p[2]),
                       static_cast<uint32_t>(p[3]));
}

sl::Stride Stride(const std::vector<long>& s)
{
    return s.size() == 2 ? sl::Stride(static_cast<uint32_t>(s[0]), static_cast<uint32_t>(s[1])) : sl::Stride();
}

std::vector<std::string>& LibraryErrors()
{
    static std::vector<std::string> errors;
    return errors;
}

void ErrorSink(ethosn::utils::log::Severity severity, const char* msg)
{
    if (severity <= ethosn::utils::log::Severity::Error)
        LibraryErrors().push_back(msg);
}

double Seconds(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void WritePasses(std::ostream& os, const sl::NetworkPerformanceData& perf, const std::map<uint32_t, std::string>& owners)
{
    os << "\"passes\": [";
    for (size_t i = 0; i < perf.m_Stream.size(); ++i)
    {
        const auto& p = perf.m_Stream[i];
        const auto& s = p.m_Stats;
        os << (i ? ",\n    " : "\n    ") << "{\"ops\": [";
        size_t j = 0;
        std::set<std::string> seen;
        for (uint32_t id : p.m_OperationIds)
        {
            auto it               = owners.find(id);
            const std::string& nm = it == owners.end() ? std::to_string(id) : it->second;
            if (seen.insert(nm).second)
                os << (j++ ? ", " : "") << "\"" << Esc(nm) << "\"";
        }
        auto mem = [&](const char* name, const sl::InputStats& st) {
            os << ", \"" << name << "\": {\"dram_parallel\": " << st.m_MemoryStats.m_DramParallel
               << ", \"dram_non_parallel\": " << st.m_MemoryStats.m_DramNonParallel
               << ", \"sram\": " << st.m_MemoryStats.m_Sram
               << ", \"stripes\": " << st.m_StripesStats.m_NumCentralStripes + st.m_StripesStats.m_NumBoundaryStripes
               << ", \"reloads\": " << st.m_StripesStats.m_NumReloads << "}";
        };
        os << "]";
        mem("input", s.m_Input);
        mem("output", s.m_Output);
        mem("weights", s.m_Weights);
        os << ", \"mce_ops\": " << s.m_Mce.m_Operations << ", \"mce_cycles\": " << s.m_Mce.m_CycleCount
           << ", \"ple_patches\": " << s.m_Ple.m_NumOfPatches << ", \"ple_cycles\": " << s.m_Ple.m_CycleCount << "}";
    }
    os << "]";
    os << ", \"failures\": {";
    size_t j = 0;
    for (auto& kv : perf.m_OperationIdFailureReasons)
    {
        auto it = owners.find(kv.first);
        os << (j++ ? ", " : "") << "\"" << Esc(it == owners.end() ? std::to_string(kv.first) : it->second)
           << "\": \"" << Esc(kv.second) << "\"";
    }
    os << "}";
}

}    // namespace
