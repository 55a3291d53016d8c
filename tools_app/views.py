from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def programs_page(request: HttpRequest) -> HttpResponse:
    return render(request, "tools_app/programs.html", {})
